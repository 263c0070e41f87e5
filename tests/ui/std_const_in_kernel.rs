// Rule: device code is `no_std`; `std::` paths (here a constant) are not available in kernels.
use kernel_runtime::prelude::*;

#[kernel]
fn scale(x: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] *= std::f32::consts::PI;
    }
}

fn main() {}
