// A shared array of `bool`s keeps its flags in bytes that only its own reads and writes
// touch: an atomic on one could leave a byte that is not a `bool`'s 0 or 1.
use kernel_runtime::prelude::*;

#[kernel]
pub fn flags(out: &mut [u32]) {
    let seen = shared_array![bool; 32];
    atomic_max(&seen, 0, true);
    out[0] = seen[0] as u32;
}

fn main() {}
