// Dynamic shared memory takes only types that any bits make a value of.
use kernel_runtime::prelude::*;

#[kernel]
pub fn names(out: &mut [u32]) {
    let s = dynamic_shared![String];
    out[0] = s.len() as u32;
}

fn main() {}
