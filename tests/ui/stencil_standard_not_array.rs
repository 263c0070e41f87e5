// Rule: `standard_indexing` names read-only array parameters.
use kernel_runtime::prelude::*;

#[stencil(standard_indexing = (w))]
fn scaled(x: &[f32], w: f32) -> f32 {
    w * x[0]
}

fn main() {}
