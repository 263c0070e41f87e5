// `launch_bounds` takes a block's most threads and the blocks to keep resident on a
// multiprocessor; Numba's third bound (blocks per cluster) is not taken.
use kernel_runtime::prelude::*;

#[kernel(launch_bounds = (256, 2, 4))]
fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
