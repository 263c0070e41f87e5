// A kernel that takes a raw pointer is an `unsafe fn`: nothing checks what the pointer addresses.
use kernel_runtime::prelude::*;

#[kernel]
fn scale(n: usize, x: *mut f32) {
    let i = grid(1);
    if i < n {
        unsafe { *x.add(i) *= 2.0 };
    }
}

fn main() {}
