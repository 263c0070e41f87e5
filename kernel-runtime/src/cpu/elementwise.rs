//! Element-wise launches on the CPU backend (`#[vectorize]`): disjoint ranges in parallel.

use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Elements per task of an element-wise launch on the CPU backend.
const CHUNK: usize = 1 << 15;

/// Runs `f(lo, hi)` over disjoint ranges covering `0..n`, in parallel; a panic becomes the
/// returned message, with its source line (described on the thread that panicked).
pub fn elementwise<F: Fn(usize, usize) + Sync>(n: usize, f: F) -> Result<(), String> {
    (0..n.div_ceil(CHUNK)).into_par_iter().try_for_each(|c| {
        let _panics = crate::cpu::fault::KernelPanics::begin();
        catch_unwind(AssertUnwindSafe(|| f(c * CHUNK, ((c + 1) * CHUNK).min(n))))
            .map_err(crate::cpu::fault::describe_panic)
    })
}

/// A pointer the CPU backend shares between worker threads for element-wise launches, whose
/// ranges never overlap.
#[derive(Clone, Copy)]
pub struct SharedPtr<T>(pub *mut T);
impl<T> SharedPtr<T> {
    /// The pointer (a method, so that closures capture the whole `SharedPtr`).
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}
// SAFETY: used only by `elementwise`, whose workers touch disjoint ranges.
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedPtr<T> {}
