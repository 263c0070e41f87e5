// A kernel cannot be `async`: device code has no executor.
use kernel_runtime::prelude::*;

#[kernel]
async fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

fn main() {}
