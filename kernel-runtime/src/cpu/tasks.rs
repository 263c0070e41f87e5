//! The parallel loop of the CPU backend's whole-array launches (`#[vectorize]`, `#[reduce]`,
//! `#[stencil]`): tasks by index, through `dyn`, so that rayon's machinery is compiled once, in
//! this crate, rather than once for each kernel that runs this way.

use super::fault::{describe_panic, KernelFault, KernelPanics};
use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `task(0)`, .., `task(n - 1)` in parallel; the error of the first task, in order, that
/// fails (tasks after it may not run).
pub(crate) fn run(
    n: usize,
    task: &(dyn Fn(usize) -> Result<(), KernelFault> + Sync),
) -> Result<(), KernelFault> {
    match n {
        0 => Ok(()),
        1 => task(0),
        _ => (0..n)
            .into_par_iter()
            .map(task)
            .find_first(Result::is_err)
            .unwrap_or(Ok(())),
    }
}

/// Runs `work`, a task's part: a fault in it its error, a panic its message.
pub(crate) fn guarded<R>(work: impl FnOnce() -> R) -> Result<R, KernelFault> {
    let _panics = KernelPanics::begin();
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
        match payload.downcast::<KernelFault>() {
            Ok(fault) => *fault,
            Err(payload) => KernelFault::Message(describe_panic(payload)),
        }
    })
}

/// A task's fault as the message that the element-wise and reduction launches return.
pub(crate) fn message(fault: KernelFault) -> String {
    match fault {
        KernelFault::Message(message) => message,
        KernelFault::Finding(finding) => finding.to_string(),
    }
}

/// A pointer that the tasks of one launch share, each touching elements no other task does:
/// an element-wise launch's arrays, a stencil's output rows, a reduction's partial results.
#[derive(Clone, Copy)]
pub struct SharedPtr<T>(pub *mut T);

// SAFETY: the tasks that share it touch disjoint elements (the contract of its users).
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    /// The pointer (a method, so that closures capture the whole `SharedPtr`).
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }

    /// The `len` elements from `at`.
    ///
    /// # Safety
    /// They lie in the array the pointer was taken from, and no other task touches them while
    /// the slice lives.
    #[inline(always)]
    pub(crate) unsafe fn slice<'a>(self, at: usize, len: usize) -> &'a mut [T] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(at), len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_and_the_first_failure_in_order_is_returned() {
        let seen: Vec<std::sync::atomic::AtomicBool> =
            (0..100).map(|_| Default::default()).collect();
        let all = run(100, &|t| {
            seen[t].store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        });
        assert!(
            all.is_ok()
                && seen
                    .iter()
                    .all(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        );
        let failed = run(100, &|t| match t % 30 == 29 {
            true => Err(KernelFault::Message(format!("task {t}"))),
            false => Ok(()),
        });
        assert!(matches!(failed, Err(KernelFault::Message(m)) if m == "task 29"));
        assert!(run(0, &|_| unreachable!()).is_ok());
    }
}
