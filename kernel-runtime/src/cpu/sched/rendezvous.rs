//! Where threads and blocks meet, and how they wait there: the one place for what a barrier, a
//! warp collective and a grid barrier are ([`Meet`], [`Arrival`], [`GridStop`]), what each
//! thread of a block is between two rounds ([`State`]), and the calls with which a running
//! kernel thread stops for its block's scheduler ([`suspend`], [`wait`]) and a block for the
//! grid's ([`block_arrives`]). The schedulers ([`fibers`](super::fibers),
//! [`warp`](super::warp), [`cooperative`](super::cooperative)) decide when the waiting go on.

use super::super::fault::{self, raise};
use super::super::launch::{tls, BlockState};
use corosensei::Yielder;
use std::cell::Cell;
use std::panic::Location;

thread_local! {
    /// The yielder of the coroutine running on this OS thread (barrier mode), or null.
    pub(crate) static FIBER: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// The kinds of barrier, which must agree across the threads of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierKind {
    /// `sync_threads()`.
    Sync,
    /// `sync_threads_count(pred)`.
    Count,
    /// `sync_threads_and(pred)`.
    And,
    /// `sync_threads_or(pred)`.
    Or,
}

impl BarrierKind {
    fn name(self) -> &'static str {
        match self {
            BarrierKind::Sync => "sync_threads()",
            BarrierKind::Count => "sync_threads_count()",
            BarrierKind::And => "sync_threads_and()",
            BarrierKind::Or => "sync_threads_or()",
        }
    }
}

/// Where a thread stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Meet {
    /// A block barrier.
    Barrier(BarrierKind),
    /// A warp collective.
    Warp(WarpOp),
    /// `activemask()`, answered once every thread has stopped, with the warp's live lanes.
    ActiveMask,
    /// A grid barrier of a cooperative launch (see [`cooperative`](super::cooperative)).
    Grid,
}

/// What a thread reports when it stops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival {
    pub(crate) meet: Meet,
    /// A barrier's predicate or a collective's value (a vote's predicate as 0 or 1).
    pub(crate) value: u64,
    /// A collective's lanes.
    pub(crate) mask: u32,
    /// A shuffle's source lane, delta or lane mask.
    pub(crate) arg: u32,
    pub(crate) location: &'static Location<'static>,
}

impl Arrival {
    /// `sync_threads() at src/file.rs:12:5`, `shfl_sync(0xffffffff) at src/file.rs:14:17`.
    pub(crate) fn describe(&self) -> String {
        match self.meet {
            Meet::Barrier(kind) => format!("{} at {}", kind.name(), self.location),
            Meet::Warp(op) => format!("{}({:#010x}) at {}", op.name(), self.mask, self.location),
            Meet::ActiveMask => format!("activemask() at {}", self.location),
            Meet::Grid => format!("grid_sync() at {}", self.location),
        }
    }
}

/// The kinds of shuffle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    /// From lane `arg % 32`.
    Idx,
    /// From lane `lane - arg`.
    Up,
    /// From lane `lane + arg`.
    Down,
    /// From lane `lane ^ arg`.
    Xor,
}

/// The warp collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpOp {
    /// `shfl_sync` and its kinds.
    Shfl(ShflMode),
    /// `ballot_sync`.
    Ballot,
    /// `all_sync`.
    All,
    /// `any_sync`.
    Any,
    /// `eq_sync`.
    Eq,
    /// `match_any_sync`.
    MatchAny,
    /// `match_all_sync`.
    MatchAll,
    /// `syncwarp`.
    Sync,
    /// The lanes' posts of one type (a [`gather`](super::warp::gather)), for the collective
    /// `name`.
    Gather {
        name: &'static str,
        kind: core::any::TypeId,
    },
}

impl WarpOp {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WarpOp::Shfl(ShflMode::Idx) => "shfl_sync",
            WarpOp::Shfl(ShflMode::Up) => "shfl_up_sync",
            WarpOp::Shfl(ShflMode::Down) => "shfl_down_sync",
            WarpOp::Shfl(ShflMode::Xor) => "shfl_xor_sync",
            WarpOp::Ballot => "ballot_sync",
            WarpOp::All => "all_sync",
            WarpOp::Any => "any_sync",
            WarpOp::Eq => "eq_sync",
            WarpOp::MatchAny => "match_any_sync",
            WarpOp::MatchAll => "match_all_sync",
            WarpOp::Sync => "syncwarp",
            WarpOp::Gather { name, .. } => name,
        }
    }
}

/// Each thread of a block between two rounds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum State {
    /// Runs on, resumed with this value (a barrier's or collective's result).
    Run(u64),
    /// Stopped at a barrier or collective.
    Wait(Arrival),
    /// Returned.
    Done,
}

/// The coroutine of a simulated thread: resumed with a barrier's or collective's result.
pub(crate) type Fiber = Yielder<u64, Arrival>;

/// A block stopped at a grid barrier: its barrier interval, and the barrier's line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GridStop {
    pub(crate) interval: u32,
    pub(crate) location: At,
}

/// A line of the kernel: as a thread's call gives it, or as the `#[kernel]` macro wrote it (in
/// a kernel split at its barriers).
#[derive(Clone, Copy, Debug)]
pub(crate) enum At {
    Call(&'static Location<'static>),
    Text(&'static str),
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Call(location) => location.fmt(f),
            At::Text(text) => f.write_str(text),
        }
    }
}

/// A block's coroutine: resumed with the barrier interval its next phase starts at.
pub(crate) type BlockYielder = Yielder<u32, GridStop>;
thread_local! {
    /// The yielder of the block coroutine running on this OS thread, or null.
    pub(crate) static BLOCK: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// A grid barrier reached by the calling kernel thread (`GridGroup::sync`): the thread waits
/// until its block's scheduler resumes it, once every block has stopped at a grid barrier.
pub(crate) fn grid_barrier(location: &'static Location<'static>) {
    let arrival = Arrival {
        meet: Meet::Grid,
        value: 0,
        mask: 0,
        arg: 0,
        location,
    };
    if suspend(arrival).is_none() {
        fault::raise_with_coordinates(format!(
            "kernel `{}` reached grid_sync() at {location} in a launch that is not cooperative",
            tls::block().kernel
        ))
    }
}

/// Called by a block's scheduler once every thread of the block waits at the grid barrier of
/// `stop`: suspends the block until every block of the grid has stopped at one; returns the
/// barrier interval the block's next phase starts at (checked mode orders every access of an
/// interval at or after it after those of the phases before).
pub(crate) fn block_arrives(stop: GridStop) -> u32 {
    let yielder = BLOCK.with(Cell::get);
    if yielder.is_null() {
        raise(format!(
            "kernel `{}` reached grid_sync() at {} in a launch that is not cooperative",
            tls::block().kernel,
            stop.location
        ))
    }
    let state = tls::block();
    // SAFETY: BLOCK points at the yielder of the block coroutine running on this OS thread; it
    // is set when the coroutine starts and restored below after every suspension.
    let next = unsafe { &*(yielder as *const BlockYielder) }.suspend(stop);
    BLOCK.with(|c| c.set(yielder));
    tls::BLOCK.with(|c| c.set(state));
    next
}

/// Suspends the calling kernel thread at `arrival` until its block's scheduler resumes it;
/// returns the barrier's or collective's result, or `None` outside a coroutine.
pub(crate) fn suspend(arrival: Arrival) -> Option<u64> {
    let fiber = FIBER.with(|c| c.get());
    if fiber.is_null() {
        return None;
    }
    // SAFETY: FIBER points at the yielder of the coroutine running on this OS thread; it is
    // set when the coroutine starts and restored below after every suspension.
    let yielder = unsafe { &*(fiber as *const Fiber) };
    let result = yielder.suspend(arrival);
    FIBER.with(|c| c.set(fiber));
    Some(result)
}

/// A barrier or collective reached by the calling kernel thread: its result, once the block's
/// scheduler resumes the thread, or `None` for a thread alone in its block (or outside a
/// kernel), which has no one to wait for. A block of several threads that do not run as
/// coroutines cannot meet: the kernel is stopped with what to do.
pub(crate) fn wait(arrival: Arrival) -> Option<u64> {
    if let Some(result) = suspend(arrival) {
        return Some(result);
    }
    let block = tls::block();
    if block.block_dim.volume() > 1 {
        fault::raise_with_coordinates(format!(
            "kernel `{}` reached {}, but runs without barrier support: the call is in a \
             function the kernel calls, which the #[kernel] macro cannot see; mark the kernel \
             #[kernel(barriers)]",
            block.kernel,
            arrival.describe()
        ))
    }
    None
}

/// A barrier reached by the calling kernel thread: suspends it until every thread of its block
/// has arrived, then returns the reduction the barrier's kind asks for.
#[inline(never)]
pub fn barrier(kind: BarrierKind, pred: bool, location: &'static Location<'static>) -> i32 {
    let arrival = Arrival {
        meet: Meet::Barrier(kind),
        value: pred as u64,
        mask: 0,
        arg: 0,
        location,
    };
    match (wait(arrival), kind) {
        (Some(result), _) => result as i32,
        (None, BarrierKind::Sync) => 0,
        (None, _) => pred as i32,
    }
}

/// Stops a block whose first thread has left while others wait at the grid barrier at
/// `location`: on a GPU that thread arrives for its block (as CUDA's own grid barrier does), so
/// the launch would hang there.
#[cold]
pub(crate) fn first_thread_left(state: &BlockState, location: &str) -> ! {
    raise(format!(
        "kernel `{}`, block {}: thread (0, 0, 0) has exited while other threads of the block wait \
         at grid_sync() at {location}; on a GPU the block's first thread arrives at a grid barrier \
         for its block, so the launch would never end: keep the first thread of each block to the \
         last grid barrier",
        state.kernel, state.block
    ))
}
