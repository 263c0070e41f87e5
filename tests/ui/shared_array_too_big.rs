// A kernel's static shared arrays may take at most 48 KiB (7000 f64 are 56000 bytes).
use kernel_runtime::prelude::*;

#[kernel]
pub fn stage(x: &[f64], out: &mut [f64]) {
    let mut tile = shared_array![f64; 7000];
    let t = thread_idx().x as usize;
    tile[t] = x[grid(1)];
    sync_threads();
    out[grid(1)] = tile[t];
}

fn main() {
    let _ = stage;
}
