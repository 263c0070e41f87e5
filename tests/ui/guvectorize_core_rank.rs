// A `#[guvectorize]` parameter has the rank its layout gives it: `(m,n)` is a matrix.
use kernel_runtime::prelude::*;

#[guvectorize("(m,n)->()")]
pub fn total(x: &[f32]) -> f32 {
    x[0]
}

fn main() {}
