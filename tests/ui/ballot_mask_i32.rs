// A warp mask is a `u32`: a signed one must be cast first.
use kernel_runtime::prelude::*;

#[kernel]
pub fn vote(out: &mut [u32]) {
    let i = grid(1);
    let mask: i32 = -1;
    let b = ballot_sync(mask, true);
    if i < out.len() {
        out[i] = b;
    }
}

fn main() {}
