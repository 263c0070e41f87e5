// `Vec::new()` needs a heap, which kernels do not have.
use kernel_runtime::prelude::*;

#[kernel]
fn collect(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    let mut v = Vec::new();
    v.push(x[i]);
    out[i] = v[0];
}

fn main() {}
