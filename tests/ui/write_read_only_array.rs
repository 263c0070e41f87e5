// An array taken as `&[T]` is read-only in the kernel: take `&mut [T]` to write it.
use kernel_runtime::prelude::*;

#[kernel]
pub fn fill(a: &[f32]) {
    let i = grid(1);
    a[i] = 1.0;
}

fn main() {
    let _ = fill;
}
