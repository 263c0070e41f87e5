// A generic kernel lists its instances: each is a PTX entry of one concrete signature.
use kernel_runtime::prelude::*;

#[kernel]
fn fill<T: Copy>(value: T, out: &mut [T]) {
    out[grid(1)] = value;
}

fn main() {}
