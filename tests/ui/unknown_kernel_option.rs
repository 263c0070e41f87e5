// `#[kernel(..)]` knows the options `boundscheck = false` and `barriers` only.
use kernel_runtime::prelude::*;

#[kernel(fastmath)]
fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
