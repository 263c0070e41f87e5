//! A kernel thread's context on the CPU backend: what `grid(1)`, `thread_idx()` and shared
//! arrays read there.

use crate::dim::Dim3;

/// The context of one kernel thread: its coordinates, the launch's shape, the block's shared
/// memory.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub(crate) thread: Dim3,
    pub(crate) block: Dim3,
    pub(crate) block_dim: Dim3,
    pub(crate) grid_dim: Dim3,
    pub(crate) shared: *mut u8,
    pub(crate) shared_bytes: usize,
    pub(crate) shared_shadow: *const crate::cpu::check::Lane,
}
