// Rule: the declared neighbourhood covers every constant relative index of the body.
use kernel_runtime::prelude::*;

#[stencil(neighborhood = ((-1, 1), (-1, 1)))]
fn wide(x: &Array2<f32>) -> f32 {
    x[[0, -1]] + x[[0, 2]]
}

fn main() {}
