//! Barriers and memory fences: `sync_threads()` and friends.
//!
//! Every thread of a block must reach each barrier (the CPU backend reports a barrier that only
//! part of a block reaches as an error instead of hanging).
//!
//! On the GPU the barriers are PTX's unaligned `barrier.sync` / `barrier.red` (sm_70 and up),
//! which the threads of a warp may reach at different instructions. `bar.sync` and `bar.red`
//! are the `.aligned` forms, which require every thread of the block to execute the same
//! instruction: LLVM's code generation may duplicate a barrier into both arms of a branch
//! (`if i < n { .. } sync_threads();` becoming one copy per arm), and an aligned barrier split so
//! across a warp hangs the block on an H200.

#[cfg(not(target_arch = "nvptx64"))]
use crate::cpu::sched::rendezvous::{barrier, BarrierKind};

/// `__syncthreads()`: waits until every thread of the block has reached this point, and makes
/// their shared and global memory writes visible to each other.
#[inline(always)]
#[track_caller]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a block-wide barrier; reaching it from every thread is the kernel's contract.
    unsafe {
        core::arch::asm!("barrier.sync 0;", options(nostack))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    barrier(BarrierKind::Sync, false, core::panic::Location::caller());
}

/// `__syncthreads_count(pred)`: a barrier that returns how many threads of the block passed
/// `true`.
#[inline(always)]
#[track_caller]
pub fn sync_threads_count(pred: bool) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a block-wide barrier with a population count; see `sync_threads`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; barrier.red.popc.u32 {r}, 0, p; }}",
                v = in(reg32) pred as u32, r = out(reg32) r
            );
        }
        r as i32
    }
    #[cfg(not(target_arch = "nvptx64"))]
    barrier(BarrierKind::Count, pred, core::panic::Location::caller())
}

/// `__syncthreads_and(pred)`: a barrier that returns whether every thread passed `true`.
#[inline(always)]
#[track_caller]
pub fn sync_threads_and(pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a block-wide barrier with a reduction; see `sync_threads`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; barrier.red.and.pred q, 0, p; selp.u32 {r}, 1, 0, q; }}",
                v = in(reg32) pred as u32, r = out(reg32) r
            );
        }
        r != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        barrier(BarrierKind::And, pred, core::panic::Location::caller()) != 0
    }
}

/// `__syncthreads_or(pred)`: a barrier that returns whether any thread passed `true`.
#[inline(always)]
#[track_caller]
pub fn sync_threads_or(pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a block-wide barrier with a reduction; see `sync_threads`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; barrier.red.or.pred q, 0, p; selp.u32 {r}, 1, 0, q; }}",
                v = in(reg32) pred as u32, r = out(reg32) r
            );
        }
        r != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        barrier(BarrierKind::Or, pred, core::panic::Location::caller()) != 0
    }
}

/// `__nanosleep(ns)`, Numba's `cuda.nanosleep(ns)`: suspends the thread for about `ns`
/// nanoseconds (between none and twice that, as the GPU chooses), as a back-off in a loop that
/// waits for another thread. PTX's `nanosleep` (sm_70 and later); on the CPU backend the host
/// thread running it sleeps.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a sleep has no preconditions.
    unsafe {
        core::arch::asm!("nanosleep.u32 {t};", t = in(reg32) ns)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::thread::sleep(std::time::Duration::from_nanos(ns.into()));
}

/// The memory fences: PTX's `membar` of a scope on the GPU; on the CPU backend, whose blocks
/// share one memory, a sequentially consistent fence for every scope.
macro_rules! fences {
    ($($(#[$doc:meta])* $name:ident => $ptx:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: a memory fence has no preconditions.
            unsafe {
                core::arch::asm!($ptx)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        }
    )*};
}

fences! {
    /// `__threadfence()`: orders this thread's memory accesses as seen by every thread of the
    /// grid.
    threadfence => "membar.gl;";
    /// `__threadfence_block()`: orders this thread's memory accesses as seen by its block.
    threadfence_block => "membar.cta;";
    /// `__threadfence_system()`: orders this thread's memory accesses as seen by every thread
    /// of the grid, the host and other devices (mapped and pinned memory).
    threadfence_system => "membar.sys;";
}
