// Rule: a stencil's tile has planes only where its arrays have three axes.
use kernel_runtime::prelude::*;

#[stencil(tile = (2, 4, 4))]
fn mean_row(x: &Array2<f32>) -> f32 {
    (x[[0, -1]] + x[[0, 0]] + x[[0, 1]]) / 3.0
}

#[stencil(tile = (4, 0, 1))]
fn laplace(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] - 2.0 * u[[0, 0, 0]]
}

fn main() {}
