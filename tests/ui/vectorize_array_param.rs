// Rule: a `#[vectorize]` function takes elements, not arrays; the launcher maps it over arrays.
use kernel_runtime::prelude::*;

#[vectorize]
fn total(x: &[f32]) -> f32 {
    x[0]
}

fn main() {}
