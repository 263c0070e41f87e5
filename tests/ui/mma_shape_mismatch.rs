// The fragments of one `mma_sync` have one shape: B of 8 columns cannot meet an accumulator of 16.
use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

#[kernel]
fn product(out: &mut Array2<f32>) {
    let a = MatrixA::<M16N16K16, f16>::new();
    let b = MatrixB::<M16N8K16, f16>::new();
    let c = Accumulator::<M16N16K16>::new();
    let mut d = c;
    mma_sync(&mut d, &a, &b, &c);
    store_matrix_sync(&mut out, [0, 0], &d, Layout::RowMajor);
}

fn main() {}
