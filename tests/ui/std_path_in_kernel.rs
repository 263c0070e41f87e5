// `std::` paths are not available in kernels: device code is `no_std` (use `core::`).
use kernel_runtime::prelude::*;

#[kernel]
fn biggest(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    out[i] = std::cmp::max(x[i] as i32, 0) as f32;
}

fn main() {}
