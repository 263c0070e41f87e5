// A `#[device]` function cannot name the grid itself: it takes it from its kernel.
use kernel_runtime::prelude::*;

#[device]
fn step(x: View1Mut<f32>, i: usize) {
    x[i] += 1.0;
    grid_sync();
}

fn main() {}
