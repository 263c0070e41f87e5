// `Vec<T>` cannot be a kernel parameter: kernels have no heap; take `&[T]`.
use kernel_runtime::prelude::*;

#[kernel]
fn scale(a: Vec<f32>, out: &mut [f32]) {
    let i = grid(1);
    out[i] = 2.0 * a[i];
}

fn main() {}
