//! Grid-wide synchronisation: `grid_sync()` and [`GridGroup`], as CUDA's
//! `cooperative_groups::this_grid().sync()` and Numba's `cuda.cg.this_grid().sync()`.
//!
//! A kernel whose body calls `this_grid()` or `grid_sync()` is cooperative: every launch of it
//! is a cooperative launch, whose blocks are all resident at once, so that each thread of the
//! grid can wait at `grid_sync()` until every other has reached it. The launch is refused
//! (an [`Error`](crate::Error), never a hang) when the grid is larger than what can be resident
//! at once: `kernel.max_cooperative_grid_blocks(threads, shared_bytes)` says how many blocks
//! can be.
//!
//! `this_grid()` and `grid_sync()` are understood in a `#[kernel]` body only; a `#[device]`
//! function takes the grid as a parameter (`g: GridGroup`) and calls `g.sync()`.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! /// Each step reads what the neighbours' blocks wrote in the step before.
//! #[kernel]
//! fn rotate(steps: u32, a: &mut [u32], b: &mut [u32]) {
//!     let i = grid(1);
//!     let n = a.len();
//!     for _ in 0..steps {
//!         if i < n {
//!             b[i] = a[(i + 1) % n];
//!         }
//!         grid_sync();
//!         if i < n {
//!             a[i] = b[i];
//!         }
//!         grid_sync();
//!     }
//! }
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let mut a = dev.to_device(&(0..64u32).collect::<Vec<_>>())?;
//! let mut b = dev.zeros::<u32, _>(64)?;
//! rotate.launch(4, 16, (3, &mut a, &mut b))?;
//! assert_eq!(a.to_vec()?, (0..64u32).map(|i| (i + 3) % 64).collect::<Vec<_>>());
//! # Ok(())
//! # }
//! ```
//!
//! On the GPU, `grid_sync()` is a barrier in global memory: after a `sync_threads()`, the first
//! thread of each block adds to a counter that the launch passes to the kernel, and waits until
//! the last block's arrival flips its top bit (the counter's other bits come back to where they
//! were, so one counter serves every launch on its stream). On the CPU backend, every block of
//! a cooperative launch runs as a coroutine, the blocks spread over the cores; at a grid
//! barrier each block stops until every block has stopped there. Threads that have exited count
//! as arrived; a grid barrier that a whole block never reaches, or whose block's first thread
//! has left (on a GPU that thread arrives for its block), is reported as an error.

use core::marker::PhantomData;

/// The grid of a cooperative launch: CUDA's `cooperative_groups::grid_group`.
///
/// Got from `this_grid()` in a `#[kernel]` body; it lives for that launch and cannot be made
/// otherwise, so that only a cooperative launch can wait at a grid barrier.
#[derive(Clone, Copy, Debug)]
pub struct GridGroup {
    /// The launch's barrier counter in global memory.
    #[cfg(target_arch = "nvptx64")]
    barrier: *mut u32,
    /// Not `Send` nor `Sync`: a kernel's thread keeps it.
    _thread: PhantomData<*const ()>,
}

impl GridGroup {
    /// The grid of the running GPU launch, whose barrier counter is `barrier`.
    ///
    /// # Safety
    /// `barrier` must point at the launch's counter in global memory, and the launch must be
    /// cooperative.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn on_gpu(barrier: *mut u32) -> GridGroup {
        GridGroup {
            barrier,
            _thread: PhantomData,
        }
    }

    /// The grid of the running CPU launch, which must be cooperative (the CPU backend stops a
    /// kernel that waits at a grid barrier otherwise).
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub(crate) fn on_cpu() -> GridGroup {
        GridGroup {
            _thread: PhantomData,
        }
    }

    /// Waits until every thread of the grid has reached a grid barrier, and makes the memory
    /// writes of each visible to all (`grid.sync()`).
    #[inline(always)]
    #[track_caller]
    pub fn sync(&self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: `barrier` is the launch's counter (see `on_gpu`), and every thread of the
        // cooperative grid reaching this call is the kernel's contract.
        unsafe {
            gpu_grid_barrier(self.barrier)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::cpu::sched::rendezvous::grid_barrier(core::panic::Location::caller());
    }

    /// The threads of the grid (CUDA's `grid_group::size()`).
    #[inline(always)]
    pub fn size(&self) -> u64 {
        let ctx = crate::ctx::Ctx::current();
        ctx.grid_dim().volume() * ctx.block_dim().volume()
    }

    /// The calling thread's rank in the grid, from 0 to `size() - 1`: its block's linear index
    /// times the block's threads, plus its linear index in the block (x fastest).
    #[inline(always)]
    pub fn thread_rank(&self) -> u64 {
        let ctx = crate::ctx::Ctx::current();
        let (g, b) = (ctx.grid_dim(), ctx.block_dim());
        let block = g.linear(ctx.block_idx());
        block * b.volume() + b.linear(ctx.thread_idx())
    }
}

/// How the code `#[kernel]` writes gets a cooperative launch's grid, through `__rt`.
pub(crate) mod hooks {
    use super::GridGroup;

    /// The grid of the running GPU launch, whose barrier counter is `barrier` (the entry
    /// point's last parameter).
    ///
    /// # Safety
    /// `barrier` must point at the launch's counter in global memory, and the launch must be
    /// cooperative.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub unsafe fn gpu_grid(barrier: *mut u32) -> GridGroup {
        // SAFETY: the caller's contract.
        unsafe { GridGroup::on_gpu(barrier) }
    }

    /// The grid of the running CPU launch.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub fn cpu_grid() -> GridGroup {
        GridGroup::on_cpu()
    }
}

/// The GPU's grid barrier on the counter at `barrier`: a block barrier, then the first thread of
/// each block arrives (block 0 with `2³¹ - (blocks - 1)`, the others with 1: the sum flips the
/// top bit and leaves the others as they were) and waits to see the top bit flip, then a block
/// barrier again.
///
/// # Safety
/// `barrier` must be the launch's counter in global memory, and every block of the grid must be
/// resident (a cooperative launch).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gpu_grid_barrier(barrier: *mut u32) {
    crate::sync::sync_threads();
    let ctx = crate::ctx::Ctx::current();
    if ctx.thread_idx() == crate::dim::Dim3::ZERO {
        let (grid, block) = (ctx.grid_dim(), ctx.block_idx());
        let blocks = grid.volume() as u32;
        let arrive = if grid.linear(block) == 0 {
            0x8000_0000u32.wrapping_sub(blocks.wrapping_sub(1))
        } else {
            1
        };
        let old: u32;
        // SAFETY: `barrier` is a live, aligned counter that only these atomics and loads touch.
        unsafe {
            core::arch::asm!(
                "membar.gl;",
                "atom.add.u32 {old}, [{p}], {v};",
                old = out(reg32) old, p = in(reg64) barrier, v = in(reg32) arrive,
            );
        }
        loop {
            let now: u32;
            // SAFETY: as above; a volatile load sees the other blocks' arrivals.
            unsafe {
                core::arch::asm!("ld.volatile.u32 {now}, [{p}];", now = out(reg32) now, p = in(reg64) barrier);
            }
            if (old ^ now) & 0x8000_0000 != 0 {
                break;
            }
        }
        // SAFETY: a memory fence has no preconditions.
        unsafe { core::arch::asm!("membar.gl;") };
    }
    crate::sync::sync_threads();
}
