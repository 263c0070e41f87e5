// Rule: a relative index computed at run time needs a declared neighbourhood, or the stencil's
// reach cannot be known and its interior cannot run unchecked.
use kernel_runtime::prelude::*;

#[stencil]
fn shifted(x: &[f32], k: isize) -> f32 {
    x[k] + x[0]
}

fn main() {}
