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
    pub(crate) shared_shadow: Shadow,
}

/// What checked mode records of a block's shared memory, as the block's threads carry it:
/// opaque to the launch and the schedulers (only [`check`](crate::cpu::check) makes and reads
/// one), [`Shadow::NONE`] on the fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shadow(pub(crate) *const ());

impl Shadow {
    /// No record: the fast path.
    pub(crate) const NONE: Shadow = Shadow(std::ptr::null());

    /// Whether the block runs in checked mode.
    #[inline(always)]
    pub(crate) fn is_some(self) -> bool {
        !self.0.is_null()
    }
}
