// Rule: a relative index has one offset per axis of the input.
use kernel_runtime::prelude::*;

#[stencil]
fn left(x: &Array2<f32>) -> f32 {
    x[-1]
}

fn main() {}
