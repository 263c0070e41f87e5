// A kernel needs no lifetime parameters: each launch ties its arrays to its arguments.
use kernel_runtime::prelude::*;

#[kernel]
pub fn copy<'a>(x: &'a [f32], out: &mut [f32]) {
    let i = grid(1);
    out[i] = x[i];
}

fn main() {}
