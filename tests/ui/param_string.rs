// `String` cannot be a kernel parameter.
use kernel_runtime::prelude::*;

#[kernel]
fn greet(name: String, out: &mut [u8]) {
    out[grid(1)] = name.len() as u8;
}

fn main() {}
