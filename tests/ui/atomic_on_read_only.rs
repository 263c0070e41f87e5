// Atomics update their array: a read-only parameter cannot take one.
use kernel_runtime::prelude::*;

#[kernel]
pub fn count(flags: &[u32], total: &[u32]) {
    let i = grid(1);
    if i < flags.len() {
        atomic_add(&total, 0, flags[i]);
    }
}

fn main() {}
