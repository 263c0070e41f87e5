use kernel_runtime::prelude::*;

#[reduce]
fn widen(a: f32, b: f64) -> f64 {
    a as f64 + b
}

fn main() {}
