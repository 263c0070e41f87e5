// A kernel returns nothing: results go into a `&mut` array parameter.
use kernel_runtime::prelude::*;

#[kernel]
fn sum(a: &[f32]) -> f32 {
    a[0]
}

fn main() {}
