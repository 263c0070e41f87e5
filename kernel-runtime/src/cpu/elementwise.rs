//! Element-wise launches on the CPU backend (`#[vectorize]`): disjoint ranges in parallel.

use super::fault::{describe_panic, KernelFault, KernelPanics};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Elements per task of an element-wise launch on the CPU backend.
const CHUNK: usize = 1 << 15;

/// Runs `f(lo, hi)` over disjoint ranges covering `0..n`, in parallel; a panic becomes the
/// returned message, with its source line (described on the thread that panicked).
pub fn elementwise<F: Fn(usize, usize) + Sync>(n: usize, f: F) -> Result<(), String> {
    ranges(n, &f)
}

/// [`elementwise`] through `dyn`: the tasks, not the kernel, are compiled here.
fn ranges(n: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), String> {
    let task = |c: usize| {
        let _panics = KernelPanics::begin();
        catch_unwind(AssertUnwindSafe(|| f(c * CHUNK, ((c + 1) * CHUNK).min(n))))
            .map_err(|payload| KernelFault::Message(describe_panic(payload)))
    };
    super::tasks::run(n.div_ceil(CHUNK), &task).map_err(message)
}

/// A task's fault as the message the element-wise and reduction launches return.
pub(crate) fn message(fault: KernelFault) -> String {
    match fault {
        KernelFault::Message(message) => message,
        KernelFault::Finding(finding) => finding.to_string(),
    }
}
