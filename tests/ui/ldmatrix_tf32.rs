// ldmatrix moves 16-bit elements: it loads tf32's A (pairs of them), but not B, which would need
// them transposed: B loads with load_matrix_sync.
use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

#[kernel]
fn tf32_tile(a: &Array2<f32>) {
    let s = shared_array![f32; [8, 8]];
    let mut f = MatrixB::<M16N8K8, Tf32>::new();
    ldmatrix_sync(&mut f, &s, [0, 0], Layout::RowMajor);
    let _ = a;
}

fn main() {}
