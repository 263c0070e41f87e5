//! The simulated thread's coordinates, kept per OS thread for code outside the kernel body
//! (`#[device]` functions, fault reports).

use super::context::Ctx;
use super::BlockState;
use crate::dim::Dim3;
use std::cell::Cell;

/// The thread coordinate recorded while the running thread is not tracked.
pub(crate) const UNKNOWN_THREAD: Dim3 = Dim3::new(u32::MAX, u32::MAX, u32::MAX);

/// Where the running thread is, for messages: `block (x, y, z), thread (x, y, z)`, or that
/// it is unknown (a fault in an untracked thread loop that its replay did not reproduce).
pub(crate) fn coordinates_text() -> String {
    match thread() {
        UNKNOWN_THREAD => "block and thread unknown".to_string(),
        t => format!("block {}, thread {t}", block().block),
    }
}

thread_local! {
    pub(crate) static BLOCK: Cell<BlockState> = const { Cell::new(BlockState::NONE) };
    pub(crate) static THREAD: Cell<Dim3> = const { Cell::new(Dim3::ZERO) };
}

#[inline]
pub(crate) fn set_thread(t: Dim3) {
    THREAD.with(|c| c.set(t));
}

#[inline]
pub(crate) fn block() -> BlockState {
    BLOCK.with(|c| c.get())
}

#[inline]
pub(crate) fn thread() -> Dim3 {
    THREAD.with(|c| c.get())
}

pub(crate) fn current_ctx() -> Ctx {
    let b = block();
    Ctx {
        thread: thread(),
        block: b.block,
        block_dim: b.block_dim,
        grid_dim: b.grid_dim,
        shared: b.shared,
        shared_bytes: b.shared_bytes,
        shared_shadow: b.shared_shadow,
    }
}
