//! The bounds a kernel declares with `#[kernel(launch_bounds = (threads, blocks))]`, as CUDA's
//! `__launch_bounds__(threads, blocks)` and Numba's `@cuda.jit(launch_bounds=...)`: its blocks
//! have at most `threads` threads, and `blocks` of them should be resident on one
//! multiprocessor at once. The build writes them into the kernel's PTX (`.maxntid`,
//! `.minnctapersm`), so that ptxas keeps the kernel's registers within what `blocks` blocks of
//! `threads` threads leave each thread; every launch of the kernel, on every backend, is
//! refused where its block has more threads.
//!
//! `#[kernel(max_registers = n)]`, Numba's `max_registers` (nvcc's `-maxrregcount` for one
//! kernel), caps the registers of each thread at `n` (PTX's `.maxnreg`): more blocks fit on a
//! multiprocessor, and what does not fit in `n` registers spills to local memory.

/// The bounds `[threads, blocks]` of a kernel, checked when its crate compiles: `threads` from 1
/// to 1024, and `blocks` from 1 to 32, or 0 where the kernel gives none.
///
/// ```
/// assert_eq!(kernel_runtime::__rt::launch_bounds(256, 2), [256, 2]);
/// ```
pub const fn checked(threads: u64, blocks: u64) -> [u32; 2] {
    assert!(
        threads >= 1 && threads <= 1024,
        "launch_bounds: a block's threads (the first bound) are 1 to 1024"
    );
    assert!(
        blocks <= 32,
        "launch_bounds: the blocks resident on a multiprocessor (the second bound) are at most 32"
    );
    [threads as u32, blocks as u32]
}

/// The registers a kernel caps each thread at with `#[kernel(max_registers = n)]`, checked when
/// its crate compiles: 16 to 255 (ptxas raises a cap below the architecture's least, 24 on
/// sm_90).
///
/// ```
/// assert_eq!(kernel_runtime::__rt::max_registers(64), 64);
/// ```
pub const fn max_registers(n: u64) -> u32 {
    assert!(
        n >= 16 && n <= 255,
        "max_registers: a thread's registers are capped at 16 to 255"
    );
    n as u32
}
