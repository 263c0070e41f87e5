// `Box<T>` cannot be a kernel parameter: kernels have no heap.
use kernel_runtime::prelude::*;

#[kernel]
fn fill(value: Box<f32>, out: &mut [f32]) {
    out[grid(1)] = *value;
}

fn main() {}
