// Scalars are passed by value (`f32`, not `&f32`); only arrays are passed by reference.
use kernel_runtime::prelude::*;

#[kernel]
fn fill(value: &f32, out: &mut [f32]) {
    out[grid(1)] = *value;
}

fn main() {}
