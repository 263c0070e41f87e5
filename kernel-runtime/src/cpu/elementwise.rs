//! Element-wise launches on the CPU backend (`#[vectorize]`): disjoint ranges in parallel.

use super::tasks::{guarded, message};

/// Elements per task of an element-wise launch on the CPU backend.
const CHUNK: usize = 1 << 15;

/// Runs `f(lo, hi)` over disjoint ranges covering `0..n`, in parallel; a panic becomes the
/// returned message, with its source line (described on the thread that panicked).
pub fn elementwise<F: Fn(usize, usize) + Sync>(n: usize, f: F) -> Result<(), String> {
    ranges(n, &f)
}

/// [`elementwise`] through `dyn`: the tasks, not the kernel, are compiled here.
fn ranges(n: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), String> {
    let task = |c: usize| guarded(|| f(c * CHUNK, ((c + 1) * CHUNK).min(n)));
    super::tasks::run(n.div_ceil(CHUNK), &task).map_err(message)
}
