//! Checked mode's shadow memory: who last wrote and read each element of a writable array or of
//! the block's shared memory, from which data races and reads of shared memory never written
//! are found.
//!
//! Read-only array parameters need no shadow: the borrow checker keeps an array from being
//! passed both as `&` and `&mut`, so no thread of the launch writes them.
//!
//! Two accesses to one element by different threads race unless one is ordered before the
//! other, or both are atomics. Within a launch, accesses of different blocks never are
//! ordered; accesses of one block are ordered when a barrier lies between them, or when they
//! are lanes of one warp with a `syncwarp` of both between them (see the `clock` module). A
//! thread's record is its block, the block's barrier interval (how many barriers the block has
//! passed) and its thread (linear index in the block), and where the block keeps warp clocks,
//! its epoch beside it. Each element keeps its last write and a summary of its reads, in one
//! word each:
//!
//! - the last write, with flags for atomic writes by several threads of one interval or by
//!   several blocks (each such pair is not a race, but a later plain access races with them);
//! - the latest read, with flags for reads by several threads of its interval and by several
//!   blocks, and a witness of each kept beside the word for the report.
//!
//! Where the block keeps warp clocks, each word has the epoch of its access beside it, and the
//! accesses of several threads of one interval that a word's flag stands for are kept in a
//! group: the epoch of each lane of one warp, and one access of another warp (`syncwarp` may
//! order some lanes of a warp before a later access and not others, which one word cannot say).
//!
//! A launch stops at its first race, so the records only ever describe race-free histories:
//! this is what lets one word stand for all earlier accesses.
//!
//! Blocks run in parallel. Each worker records its blocks' accesses in lanes of its own (the
//! `lane` module), plain memory that no other thread touches; when every block has run, the
//! launch compares the workers' lanes where two of them touched the same page (the `launch`
//! module).
//!
//! Lanes are reused from launch to launch without clearing: blocks are numbered by a clock
//! that runs on across launches, so a record of an earlier launch has a block number outside
//! the current launch's range (a lane is cleared once in 2³² blocks, before numbers repeat).

pub(crate) mod clock;
mod lane;
mod launch;
mod rows;
mod run;
pub(crate) mod warpgroup;

pub(crate) use lane::{Lane, MAX_INTERVAL};
pub(crate) use launch::unflatten;
pub use launch::LaunchShadows;
pub(crate) use rows::{run_rows, RowBodies};
pub use rows::{NoRecord, RecordSpan, SpanRecord};
pub(crate) use run::{serial_block, CheckedBlock};

use super::fault::raise_finding;
use super::finding::{Access, AccessKind, Finding, Reader};
use super::launch::context::Shadow;
use super::launch::tls;
use super::unwritten::Marks;
use lane::{Conflict, Rec};
use std::cell::Cell as StdCell;
use std::panic::Location;

/// The running simulated thread of a checked launch, as the shadow records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Who {
    /// The block's number on the block clock (zero: no checked thread runs).
    pub(crate) block: u32,
    /// How many barriers the block has passed.
    pub(crate) interval: u32,
    /// The thread's linear index in its block.
    pub(crate) thread: u32,
    /// The thread's epoch on its warp clock (see [`clock`]); 0 where its block keeps no warp
    /// clocks (its threads run one after another, or alone).
    pub(crate) epoch: u32,
    /// In a cooperative launch, the interval at which the grid's current phase started: every
    /// access of another block in an earlier interval is ordered before the thread's, by the
    /// grid barrier between them (0 elsewhere).
    pub(crate) phase: u32,
}

thread_local! {
    static WHO: StdCell<Who> = const {
        StdCell::new(Who { block: 0, interval: 0, thread: 0, epoch: 0, phase: 0 })
    };
}

/// Makes `who` the running checked thread of this OS thread.
#[inline]
pub(crate) fn set_who(who: Who) {
    WHO.with(|c| c.set(who));
}

/// The running checked thread.
#[inline]
pub(crate) fn who() -> Who {
    WHO.with(|c| c.get())
}

/// What a view's accesses are recorded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Nothing: the fast CPU backend.
    Off,
    /// Nothing, on the fast CPU backend, for an array in the block's shared memory: only the
    /// block's threads access it, one after another on one OS thread, so its atomics need no
    /// atomic instruction.
    Block,
    /// Nothing, but indices are checked: a read-only array in checked mode.
    ReadOnly,
    /// Nothing, but indices are checked and reads tested against these marks: a read-only
    /// array in checked mode that holds elements nothing has written.
    Unwritten(*const Marks),
    /// The running worker's lane of the launch's writable array of this index.
    Global(usize),
    /// The running worker's lane of the block's shared memory.
    Shared(*const Lane),
}

/// How a view's accesses are checked: the lane they are recorded in, the slot of the view's
/// first element and the slots between consecutive elements (1 for an array, the element's
/// size for shared memory, whose lane has a slot per byte), and the thread that accesses it
/// where the run names it in the view (see [`Trace::named`]).
#[derive(Clone, Copy, Debug)]
pub struct Trace {
    target: Target,
    base: usize,
    stride: usize,
    thread: Named,
}

/// The thread whose accesses a trace records, where the run names it in the views (checked
/// rows: see the `rows` module): its block's number on the block clock (0: not named, the
/// running thread is [`who`]) and its linear index in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Named {
    block: u32,
    thread: u32,
}

impl Named {
    /// The thread whose access is recorded: this one, else the running one.
    #[inline(always)]
    fn who(self) -> Who {
        match self {
            Named { block: 0, .. } => who(),
            Named { block, thread } => Who {
                block,
                thread,
                ..Who::default()
            },
        }
    }
}

impl Trace {
    /// No checking: the fast CPU backend.
    pub const OFF: Trace = Trace {
        target: Target::Off,
        base: 0,
        stride: 1,
        thread: Named {
            block: 0,
            thread: 0,
        },
    };

    /// A read-only array in checked mode: its indices are checked, its accesses not recorded.
    const READ_ONLY: Trace = Trace {
        target: Target::ReadOnly,
        ..Trace::OFF
    };

    /// A read-only array in checked mode whose unwritten elements `marks` has.
    fn unwritten(marks: &Marks) -> Trace {
        Trace {
            target: Target::Unwritten(marks),
            ..Trace::OFF
        }
    }

    /// The launch's writable array `index`.
    fn global(index: usize) -> Trace {
        Trace {
            target: Target::Global(index),
            ..Trace::OFF
        }
    }

    /// A shared array on the fast CPU backend: not checked, its elements the block's alone.
    pub(crate) const BLOCK: Trace = Trace {
        target: Target::Block,
        ..Trace::OFF
    };

    /// The trace of the view's elements from `elements` on (a slice of it).
    #[inline(always)]
    pub(crate) fn skip(self, elements: usize) -> Trace {
        Trace {
            base: self.base.wrapping_add(elements.wrapping_mul(self.stride)),
            ..self
        }
    }

    /// The trace of the same view, its accesses made by thread `thread` (linear index) of the
    /// block numbered `block` on the block clock (not 0), not by the running thread.
    #[inline(always)]
    pub(crate) fn named(self, block: u32, thread: u32) -> Trace {
        Trace {
            thread: Named { block, thread },
            ..self
        }
    }

    /// Whether accesses are checked.
    #[inline(always)]
    pub fn on(&self) -> bool {
        !matches!(self.target, Target::Off | Target::Block)
    }

    /// Whether reads are tested against elements nothing has written.
    #[inline(always)]
    pub(crate) fn tests_unwritten(&self) -> bool {
        matches!(self.target, Target::Unwritten(_))
    }

    /// Whether the view is a shared array on the fast CPU backend, which only its block's
    /// threads access, one after another on one OS thread.
    #[inline(always)]
    pub(crate) fn block_private(&self) -> bool {
        self.target == Target::Block
    }

    /// The trace of a shared array `offset` bytes into the block's shared memory, whose lane is
    /// `lane` (null outside checked mode).
    #[inline(always)]
    pub(crate) fn shared(shadow: Shadow, offset: usize, elem: usize) -> Trace {
        Trace {
            // Only `run::checked_block` makes a shadow: it points at the block's lane.
            target: if shadow.is_some() {
                Target::Shared(shadow.0 as *const Lane)
            } else {
                Target::Off
            },
            base: offset,
            stride: elem.max(1),
            ..Trace::OFF
        }
    }
}

/// A writable view as checked mode's span records take it (see [`SpanRecord`]): its trace,
/// shape and name.
#[derive(Clone, Copy, Debug)]
pub struct Traced<const R: usize> {
    trace: Trace,
    dims: [usize; R],
    name: &'static str,
}

impl<const R: usize> Traced<R> {
    /// The view of array `name` of shape `dims` whose accesses `trace` records.
    pub(crate) fn new(trace: Trace, dims: [usize; R], name: &'static str) -> Traced<R> {
        Traced { trace, dims, name }
    }
}

/// Records an access through a view to its element at `offset`; says whether the access
/// races or reads uninitialized shared memory, the view then stopping the kernel with
/// [`report`].
///
/// The fast backend's views are never traced, and its kernels rebind them untraced, so that
/// the test before this call folds away there. In checked mode, the common plain write to a
/// writable array (see `Lane::plain_write`) is recorded inline, in the kernel's thread loop;
/// every other access costs a call.
#[inline(always)]
#[track_caller]
pub fn record(trace: &Trace, offset: usize, kind: AccessKind) -> bool {
    let slot = trace.base + offset * trace.stride;
    if let (Target::Global(index), AccessKind::Write) = (trace.target, kind) {
        let set = launch::current();
        // SAFETY: a current lane set lives until its launch has run every block.
        if let Some(lane) = unsafe { set.as_ref() }.and_then(|set| set.lane(index)) {
            if lane.plain_write(slot, trace.thread.who(), Location::caller()) {
                return false;
            }
        }
    }
    record_slot(trace.target, slot, kind, trace.thread)
}

/// The trace of an array that a stencil (its `standard_indexing` arrays) or a generalized
/// ufunc reads on the CPU backend: its reads tested against `marks`, the elements nothing has
/// written, where there are any; else none.
pub(crate) fn unwritten_reads(marks: Option<&Marks>) -> Trace {
    marks.map_or(Trace::OFF, Trace::unwritten)
}

/// The point of a stencil that checked rows compute on this OS thread: its flat index in an
/// array of `shape` (padded to three axes) of rank `rank`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StencilAt {
    pub(crate) flat: usize,
    pub(crate) shape: [usize; 3],
    pub(crate) rank: usize,
}

impl StencilAt {
    /// The point's index, of the stencil's rank.
    fn index(self) -> Vec<usize> {
        unflatten(self.flat, &self.shape[3 - self.rank.min(3)..])
    }
}

thread_local! {
    /// The stencil point checked rows compute on this thread, for a report of a read through
    /// a view, which knows no point.
    static STENCIL_AT: StdCell<Option<StencilAt>> = const { StdCell::new(None) };
}

/// Makes `at` the stencil point computed on this thread (`None`: none).
pub(crate) fn at_stencil_point(at: Option<StencilAt>) {
    STENCIL_AT.with(|c| c.set(at));
}

thread_local! {
    /// The loop index of a generalized ufunc that this thread computes, where its inputs are
    /// checked, for a report of a read through a view of a core.
    static LOOP_AT: StdCell<Option<usize>> = const { StdCell::new(None) };
}

/// Makes `i` the loop index of a generalized ufunc computed on this thread (`None`: none).
pub(crate) fn at_loop_index(i: Option<usize>) {
    LOOP_AT.with(|c| c.set(i));
}

/// Tests a read through a read-only view whose trace [tests
/// unwritten](Trace::tests_unwritten) elements, of its element at `offset`, stopping the kernel
/// with [`report_unwritten`] where nothing has written it.
///
/// Out of line, so that the view's inlined read stays a test and a call: with the test of the
/// marks inlined too, a kernel's body of one index outgrew the inliner's budget in the fast
/// backend's loops, where the test folds away (a 2-D grid-stride saxpy ran 7× slower).
#[inline(never)]
#[track_caller]
pub fn read_unwritten(trace: Trace, offset: usize, array: &'static str, dims: &[usize]) {
    if let Target::Unwritten(marks) = trace.target {
        // SAFETY: a trace's marks are its array's, which outlives the launch's views.
        if unsafe { &*marks }.contains(trace.base + offset) {
            report_unwritten(trace, offset, array, dims)
        }
    }
}

/// Stops the kernel at its read, through `trace`, of the element at `offset` of array `array`
/// of shape `dims`, which [`read_unwritten`] found nothing has written.
#[cold]
#[inline(never)]
#[track_caller]
fn report_unwritten(trace: Trace, offset: usize, array: &'static str, dims: &[usize]) -> ! {
    let Target::Unwritten(marks) = trace.target else {
        unreachable!("a report follows a read that `read_unwritten` found")
    };
    let at = Location::caller();
    // SAFETY: as in `read_unwritten`.
    let origin = unsafe { &*marks }.origin();
    if let Some(loop_index) = LOOP_AT.with(|c| c.get()) {
        // A core of a generalized ufunc: the element's index in the core.
        raise_finding(Finding::UnwrittenRead {
            array,
            index: unflatten(offset, dims),
            reader: Reader::LoopIndex { loop_index, at },
            origin,
        })
    }
    let reader = match (STENCIL_AT.with(|c| c.get()), trace.thread) {
        (Some(point), _) => Reader::Stencil {
            point: point.index(),
            at,
        },
        (None, Named { block: 0, .. }) => {
            Reader::Thread(current_access(AccessKind::Read, Some(at)))
        }
        (None, named) => {
            let state = tls::block();
            Reader::Thread(Rec::of(named.who()).access(
                AccessKind::Read,
                Some(at),
                launch::first_block(),
                state.grid_dim,
                state.block_dim,
            ))
        }
    };
    raise_finding(Finding::UnwrittenRead {
        array,
        index: unflatten(trace.base + offset, dims),
        reader,
        origin,
    })
}

/// [`record`] of the access of `thread` to `slot` of the lane `target` names: an out-of-line
/// call whose arguments all travel in registers, so that the view need not be kept in memory
/// around it. What only a report needs (the array's name and shape) is passed to [`report`].
#[inline(never)]
#[track_caller]
fn record_slot(target: Target, slot: usize, kind: AccessKind, thread: Named) -> bool {
    let lane = match target {
        // SAFETY: the lane of a shared trace is the running worker's, alive while its block runs.
        Target::Shared(lane) => unsafe { &*lane },
        Target::Global(index) => {
            let set = launch::current();
            if set.is_null() {
                return false;
            }
            // SAFETY: a current lane set lives until its launch has run every block.
            match unsafe { &*set }.lane(index) {
                Some(lane) => lane,
                None => return false,
            }
        }
        Target::Off | Target::Block | Target::ReadOnly | Target::Unwritten(_) => return false,
    };
    match lane.access(slot, kind, thread.who(), Location::caller()) {
        Ok(()) => false,
        Err(conflict) => {
            PENDING.with(|p| p.set(Some((conflict, lane.first(), slot))));
            true
        }
    }
}

thread_local! {
    /// What the last [`record`] that failed found, the launch's first block and the slot.
    static PENDING: StdCell<Option<(Conflict, u32, usize)>> = const { StdCell::new(None) };
    /// The block's first read of shared memory that no thread had written, reported when its
    /// barrier interval ends unless a write of another thread in the interval makes it a race.
    static UNWRITTEN: StdCell<Option<Box<Finding>>> = const { StdCell::new(None) };
}

/// `f` of the running block's record of its warpgroup products, in checked mode (else
/// `None`).
pub(crate) fn with_warpgroups<R>(f: impl FnOnce(&mut warpgroup::Warpgroups) -> R) -> Option<R> {
    let shadow = tls::block().shared_shadow;
    // SAFETY: a block's shared shadow is its worker's lane (`run::checked_block`), alive while
    // the block runs.
    let lane = unsafe { (shadow.0 as *const Lane).as_ref() }?;
    Some(f(&mut lane.warpgroups().borrow_mut()))
}

/// Forgets what an earlier block left unreported (it stopped on another finding).
pub(crate) fn begin_block() {
    UNWRITTEN.with(|u| u.set(None));
}

/// Ends the block's barrier interval (at a barrier, or at the block's end): a read of shared
/// memory that no thread wrote in it, nor before it, is reported now.
pub(crate) fn end_interval() {
    if let Some(finding) = UNWRITTEN.with(|u| u.take()) {
        raise_finding(*finding)
    }
}

/// The running thread's access, for a report.
pub(crate) fn current_access(kind: AccessKind, at: Option<&'static Location<'static>>) -> Access {
    Access {
        kind,
        block: tls::block().block,
        thread: tls::thread(),
        at,
    }
}

/// Stops the kernel with what the last failed [`record`] through `trace` found, on array
/// `array` of shape `dims`; a read of shared memory not yet written is kept instead, until
/// its barrier interval ends, and the kernel runs on.
#[cold]
#[inline(never)]
#[track_caller]
pub fn report(trace: Trace, kind: AccessKind, array: &'static str, dims: &[usize]) {
    let at = Location::caller();
    let Some((conflict, first_block, slot)) = PENDING.with(|p| p.take()) else {
        unreachable!("a report follows a record that found a conflict")
    };
    let offset = (slot - trace.base) / trace.stride;
    let index = launch::unflatten(offset, dims);
    let state = tls::block();
    let access = match trace.thread {
        Named { block: 0, .. } => current_access(kind, Some(at)),
        named => Rec::of(named.who()).access(
            kind,
            Some(at),
            first_block,
            state.grid_dim,
            state.block_dim,
        ),
    };
    raise_finding(match conflict {
        Conflict::InFlight(flight) => Finding::OperandInFlight {
            array,
            index,
            write: access,
            product: flight.at,
            warpgroup: flight.warpgroup(),
        },
        Conflict::Unwritten(origin) => Finding::UnwrittenRead {
            array,
            index,
            reader: Reader::Thread(access),
            origin,
        },
        Conflict::Uninitialized => {
            let first = Finding::UninitializedSharedRead {
                array,
                index,
                access,
            };
            UNWRITTEN.with(|u| {
                let kept = u.take();
                u.set(Some(kept.unwrap_or_else(|| Box::new(first))));
            });
            return;
        }
        Conflict::Race(earlier) => Finding::DataRace {
            array,
            index,
            first: earlier.rec.access(
                earlier.kind,
                earlier.at,
                first_block,
                state.grid_dim,
                state.block_dim,
            ),
            second: access,
        },
    })
}
