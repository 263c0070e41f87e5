// A reference read from uncleared shared memory would point anywhere.
use kernel_runtime::prelude::*;

#[kernel]
pub fn refs(out: &mut [u32]) {
    let s = shared_array![&'static u32; 1];
    out[0] = *s[0];
}

fn main() {}
