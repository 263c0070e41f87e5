// `grid(n)` takes the number of dimensions as a literal, not a variable.
use kernel_runtime::prelude::*;

#[kernel]
fn fill(n: u32, out: &mut [f32]) {
    let i = grid(n);
    out[i] = 1.0;
}

fn main() {}
