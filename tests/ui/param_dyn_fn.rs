// A kernel cannot take code: a closure or a trait object has no meaning on a GPU.
use kernel_runtime::prelude::*;

#[kernel]
pub fn map(f: &dyn Fn(f32) -> f32, x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    out[i] = f(x[i]);
}

#[kernel]
pub fn map_ptr(f: fn(f32) -> f32, out: &mut [f32]) {
    out[0] = f(1.0);
}

fn main() {}
