// `grid(n)` works only inside `#[kernel]` and `#[device]` functions, not in a plain helper.
use kernel_runtime::prelude::*;

fn index() -> usize {
    grid(1)
}

#[kernel]
pub fn fill(out: &mut [f32]) {
    out[index()] = 1.0;
}

fn main() {
    let _ = fill;
}
