use kernel_runtime::prelude::*;

// `usize` and `u32` index an array (`x[thread_idx().x]` needs no cast); other integer types say
// how to convert.
#[kernel]
pub fn gather(x: &[f32], at: &[u64], out: &mut [f32]) {
    let i = grid(1);
    out[thread_idx().x] = x[at[i]];
}

fn main() {}
