// A stencil's function computes one point, with no block of threads: no shared arrays.
use kernel_runtime::prelude::*;

#[stencil]
fn smooth(x: &[f32]) -> f32 {
    let mut scratch = shared_array![f32; 4];
    scratch[0] = x[-1] + x[1];
    scratch[0]
}

fn main() {}
