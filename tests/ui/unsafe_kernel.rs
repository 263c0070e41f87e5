// A kernel is `unsafe fn` only when it takes raw pointers: launching one of arrays is safe.
use kernel_runtime::prelude::*;

#[kernel]
unsafe fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
