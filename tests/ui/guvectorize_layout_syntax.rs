// A `#[guvectorize]` layout separates its groups with commas.
use kernel_runtime::prelude::*;

#[guvectorize("(n)(n)->()")]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a[0] * b[0]
}

fn main() {}
