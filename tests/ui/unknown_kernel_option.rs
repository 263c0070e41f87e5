// `#[kernel(..)]` knows the options `boundscheck = false`, `barriers`, `launch_bounds` and
// `instances(..)` only.
use kernel_runtime::prelude::*;

#[kernel(fastmath)]
fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
