// A kernel cannot be generic: a PTX entry point has one concrete signature.
use kernel_runtime::prelude::*;

#[kernel]
fn fill<T: Copy>(value: T, out: &mut [T]) {
    out[grid(1)] = value;
}

fn main() {}
