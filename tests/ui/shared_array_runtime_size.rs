// The size of a shared array must be a compile-time constant, not a kernel parameter.
use kernel_runtime::prelude::*;

#[kernel]
fn reduce(n: usize, x: &[f32], out: &mut [f32]) {
    let mut tmp = shared_array![f32; n];
    let t = thread_idx().x as usize;
    tmp[t] = x[grid(1)];
    sync_threads();
    if t == 0 {
        out[block_idx().x as usize] = tmp[0];
    }
}

fn main() {}
