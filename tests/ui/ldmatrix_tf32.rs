// ldmatrix moves 16-bit elements: a tf32 fragment loads with load_matrix_sync.
use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

#[kernel]
fn tf32_tile(a: &Array2<f32>) {
    let s = shared_array![f32; [16, 8]];
    let mut f = MatrixA::<M16N8K8, Tf32>::new();
    ldmatrix_sync(&mut f, &s, [0, 0], Layout::RowMajor);
    let _ = a;
}

fn main() {}
