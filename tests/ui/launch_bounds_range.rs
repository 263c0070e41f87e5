// A block has at most 1024 threads: bounds past it are refused when the crate compiles, at the
// option.
use kernel_runtime::prelude::*;

const THREADS: u32 = 2048;

#[kernel(launch_bounds = (THREADS, 1))]
fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
