// Shared memory is not cleared between launches: a type with drop glue or pointers in it would
// be read (and dropped) from whatever bytes were there.
use kernel_runtime::prelude::*;

#[kernel]
pub fn names(out: &mut [u32]) {
    let s = shared_array![String; 1];
    out[0] = s.len() as u32;
}

fn main() {}
