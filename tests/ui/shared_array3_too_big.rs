// A 3-D static shared array counts against the 48 KiB too: 16 x 32 x 32 f32 are 65536 bytes.
use kernel_runtime::prelude::*;

#[kernel]
pub fn stage(out: &mut [f32]) {
    let mut cube = shared_array![f32; [16, 32, 32]];
    let t = thread_idx().x as usize;
    cube[[0, 0, t]] = 1.0;
    sync_threads();
    out[grid(1)] = cube[[0, 0, t]];
}

fn main() {}
