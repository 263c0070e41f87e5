//! What a launch is on the CPU backend: its shape ([`LaunchSpec`]), each block's state as the
//! threads of the block see it ([`BlockState`]), each thread's context ([`Ctx`](context::Ctx)),
//! and the running thread's coordinates per OS thread ([`tls`]). The schedulers
//! ([`sched`](super::sched)), the fast loops and checked mode all start from here; nothing here
//! knows how threads are run.

pub mod context;
pub(crate) mod shapes;
pub mod sites;
pub(crate) mod tls;

use crate::dim::Dim3;
use context::{Ctx, Shadow};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Held, shared, by each launch on the CPU backend while it runs, and alone by a module array's
/// `set` there: a `set` from another host thread waits for the launches running, so that every
/// thread of a launch reads one snapshot, as on a GPU, where a `set` is ordered after the
/// launches queued before it.
static LAUNCHES: RwLock<()> = RwLock::new(());

/// What a launch on the CPU backend holds while it runs ([`LAUNCHES`]).
pub(crate) fn running() -> RwLockReadGuard<'static, ()> {
    LAUNCHES.read().unwrap_or_else(|p| p.into_inner())
}

/// What a module array's `set` holds while it replaces the values: no launch runs meanwhile.
pub(crate) fn alone() -> RwLockWriteGuard<'static, ()> {
    LAUNCHES.write().unwrap_or_else(|p| p.into_inner())
}

/// What the executor needs to know of a launch.
#[derive(Clone, Copy, Debug)]
pub struct LaunchSpec {
    /// The kernel's name, for reports.
    pub kernel: &'static str,
    /// Blocks of the grid.
    pub grid: Dim3,
    /// Threads of a block.
    pub block: Dim3,
    /// Shared memory bytes of each block (static arrays and dynamic part).
    pub shared_bytes: usize,
    /// Whether threads of a block must run as coroutines that can meet at barriers.
    pub barriers: bool,
    /// Whether code outside the kernel's body (a function it calls) may ask for the running
    /// thread's coordinates; if not, a barrier-free kernel runs its threads without recording
    /// them, which lets the compiler vectorize the thread loop.
    pub thread_context: bool,
    /// Whether only grid-level indices (`grid(n)`, `gridsize(n)`, the launch's shape) tell the
    /// kernel's threads apart: no `thread_idx()`, `block_idx()`, shared memory or barrier. Its
    /// threads then run as rows along x (see [`run_grid`](super::rows::run_grid)).
    pub grid_level: bool,
}

/// What the executor sets once per block.
#[derive(Clone, Copy)]
pub(crate) struct BlockState {
    pub(crate) kernel: &'static str,
    pub(crate) block: Dim3,
    pub(crate) block_dim: Dim3,
    pub(crate) grid_dim: Dim3,
    pub(crate) shared: *mut u8,
    pub(crate) shared_bytes: usize,
    /// What checked mode records of the block's shared memory, else [`Shadow::NONE`].
    pub(crate) shared_shadow: Shadow,
}

impl BlockState {
    pub(crate) const NONE: BlockState = BlockState {
        kernel: "",
        block: Dim3::ZERO,
        block_dim: Dim3::ZERO,
        grid_dim: Dim3::ZERO,
        shared: std::ptr::null_mut(),
        shared_bytes: 0,
        shared_shadow: Shadow::NONE,
    };
}

/// The state of block `b` (linear index) of the launch `spec`, with `shared` as its shared
/// memory.
pub(crate) fn block_state(spec: &LaunchSpec, b: u64, shared: *mut u8) -> BlockState {
    BlockState {
        kernel: spec.kernel,
        block: spec.grid.unflatten(b),
        block_dim: spec.block,
        grid_dim: spec.grid,
        shared,
        shared_bytes: spec.shared_bytes,
        shared_shadow: Shadow::NONE,
    }
}

/// The context of thread `thread` of the block `state`.
#[inline(always)]
pub(crate) fn ctx_of(state: &BlockState, thread: Dim3) -> Ctx {
    Ctx {
        thread,
        block: state.block,
        block_dim: state.block_dim,
        grid_dim: state.grid_dim,
        shared: state.shared,
        shared_bytes: state.shared_bytes,
        shared_shadow: state.shared_shadow,
    }
}

/// The coordinates of every thread of a block, by linear index (x fastest).
pub(crate) fn thread_coords(block: Dim3) -> Vec<Dim3> {
    (0..block.volume()).map(|t| block.unflatten(t)).collect()
}

/// The context of thread `(x, y, z)` of the block whose context is `base`; with `track`, the
/// thread is made the current one.
#[inline(always)]
pub fn enter_thread(base: Ctx, track: bool, x: u32, y: u32, z: u32) -> Ctx {
    let thread = Dim3 { x, y, z };
    if track {
        tls::set_thread(thread);
    }
    Ctx { thread, ..base }
}
