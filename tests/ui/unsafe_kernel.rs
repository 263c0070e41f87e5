// A kernel cannot be `unsafe fn`: launching is safe; unsafe operations go in `unsafe {}` blocks.
use kernel_runtime::prelude::*;

#[kernel]
unsafe fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
