// A warp shuffles 32- and 64-bit values: a byte must be widened first.
use kernel_runtime::prelude::*;

#[kernel]
pub fn rotate_bytes(x: &[u8], out: &mut [u8]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = shfl_sync(u32::MAX, x[i], (lane_id() + 1) % WARP_SIZE);
    }
}

fn main() {}
