// Rule: kernels have no heap; a `Vec` is refused even when only named in a type.
use kernel_runtime::prelude::*;

#[kernel]
fn collect(x: &mut [f32]) {
    let v: Vec<f32> = Default::default();
    x[0] = v.len() as f32;
}

fn main() {}
