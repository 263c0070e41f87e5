//! A block's threads as coroutines that meet at barriers and warp collectives.
//!
//! Kernels with barriers or warp collectives that the `#[kernel]` macro does not split into
//! thread loops run each thread of a block as a coroutine on a small stack of its own. In each round every thread that can run does, until it returns or stops at a
//! barrier, a collective or `activemask()`. Then the collectives whose lanes have all come
//! complete ([`warp::complete`]) and their lanes run on; once no collective is left, every live
//! thread must wait at one barrier, which opens. A barrier that part of the block never
//! reaches, or a collective that a lane of its mask never reaches, is reported instead of
//! hanging.

use super::check::clock::{self, WarpClock};
use super::check::{self, Who};
use super::cooperative::{self, At, GridStop};
use super::fault::{self, raise, raise_finding};
use super::finding::Finding;
use super::overflow::{self, Guarded};
use super::tls::{self, BlockState};
use super::warp::{self, Problem, WarpOp};
use crate::base::WARP_SIZE;
use crate::cpu::context::Ctx;
use crate::dim::Dim3;
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::RefCell;
use std::panic::Location;

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

type Fiber = Yielder<u64, Arrival>;

thread_local! {
    /// This worker's coroutine stacks (reused by every block it runs).
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// The default stack of a simulated thread: CUDA's limit of a thread's local memory (512 KiB),
/// and as much again for the frames around it (debug builds copy large locals). Only the pages
/// a thread touches take memory.
const DEFAULT_STACK_KIB: usize = 1024;

/// The bytes of each simulated thread's stack: `KERNEL_CPU_STACK_KIB`, or the default.
pub(crate) fn stack_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("KERNEL_CPU_STACK_KIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(DEFAULT_STACK_KIB)
            .saturating_mul(1024)
    })
}

/// The guard page of a stack whose mapping starts at `limit` (corosensei's limit includes it).
pub(crate) fn guard_at(limit: usize) -> (usize, usize) {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let page = *PAGE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: `sysconf` only reads a system setting.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        #[cfg(not(target_os = "linux"))]
        let page = 4096;
        usize::try_from(page).unwrap_or(4096)
    });
    (limit, limit.saturating_add(page))
}

/// Runs the block's threads as coroutines that meet at barriers and collectives; in checked
/// mode (`checked`: the block's number in the shadow's records), each thread is given to the
/// shadow memory as it resumes, with the number of barriers the block has passed, and threads
/// waiting at barriers of different places are reported.
pub(crate) fn run_fibers(
    state: &BlockState,
    coords: &[Dim3],
    body: &(dyn Fn(Ctx) + Sync),
    checked: Option<u32>,
) {
    let n = coords.len();
    overflow::install();
    let mut stacks = STACKS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    while stacks.len() < n {
        match DefaultStack::new(stack_size()) {
            Ok(s) => stacks.push(s),
            Err(e) => raise(format!(
                "kernel `{}`: cannot allocate a stack for simulated thread {} of {n}: {e}",
                state.kernel,
                stacks.len()
            )),
        }
    }
    // SAFETY: the lifetime is erased only to meet the coroutines' `'static` bound; every
    // coroutine is dropped (run to completion or force-unwound) before this function returns,
    // while `body` is still borrowed.
    let body: *const (dyn Fn(Ctx) + Sync + 'static) = unsafe {
        std::mem::transmute::<*const (dyn Fn(Ctx) + Sync + '_), *const (dyn Fn(Ctx) + Sync + 'static)>(
            body,
        )
    };
    {
        let mut fibers: Vec<_> = stacks
            .drain(..n)
            .enumerate()
            .map(|(t, stack)| {
                let ctx = super::exec::ctx_of(state, coords[t]);
                let guard = guard_at(stack.limit().get());
                let fiber = Coroutine::with_stack(stack, move |y: &Fiber, _: u64| {
                    tls::FIBER.with(|c| c.set(y as *const Fiber as *const ()));
                    // SAFETY: `body` outlives every coroutine (see above).
                    unsafe { (*body)(ctx) }
                });
                (fiber, guard)
            })
            .collect();
        let mut threads = vec![State::Run(0); n];
        let mut interval = 0u32;
        // The interval at which the block's current phase of a cooperative launch started.
        let mut phase = 0u32;
        // In checked mode, each thread's warp clock: the order `syncwarp` gives its accesses.
        let mut clocks: Vec<WarpClock> = match checked {
            Some(_) => (0..n)
                .map(|t| clock::start(t % WARP_SIZE as usize))
                .collect(),
            None => Vec::new(),
        };
        loop {
            for t in 0..n {
                let State::Run(input) = threads[t] else {
                    continue;
                };
                tls::set_thread(coords[t]);
                if let Some(block) = checked {
                    check::set_who(Who {
                        block,
                        interval,
                        thread: t as u32,
                        epoch: clocks[t][t % WARP_SIZE as usize],
                        phase,
                    });
                    // The clocks change only between rounds, while no thread runs.
                    clock::set_current(&clocks[t]);
                }
                let (fiber, (low, high)) = &mut fibers[t];
                let running = overflow::Running::enter(Guarded {
                    trap: fiber.trap_handler(),
                    low: *low,
                    high: *high,
                });
                let result = fiber.resume(input);
                drop(running);
                threads[t] = match result {
                    CoroutineResult::Yield(a) => State::Wait(a),
                    CoroutineResult::Return(()) => State::Done,
                };
            }
            clock::set_current(std::ptr::null());
            // Collectives first: their lanes may have barriers still to reach.
            match warp::complete(&mut threads, coords, &mut clocks) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(p) => warp_diverged(state, checked.is_some(), coords, p),
            }
            let Some(t0) = threads.iter().position(|s| matches!(s, State::Wait(_))) else {
                break;
            };
            let State::Wait(a0) = threads[t0] else {
                unreachable!("position found a waiting thread")
            };
            let kind = match a0.meet {
                Meet::Barrier(kind) => Some(kind),
                Meet::Grid => None,
                _ => unreachable!("warp::complete leaves no collective waiting"),
            };
            let same =
                |a: &Arrival| a.meet == a0.meet && (checked.is_none() || a.location == a0.location);
            let waiting = threads
                .iter()
                .filter(|s| matches!(s, State::Wait(a) if same(a)))
                .count();
            // A thread that has exited counts as arrived, as on a GPU; a live thread that
            // waits elsewhere does not.
            let exited = threads.iter().filter(|s| matches!(s, State::Done)).count();
            if waiting + exited < n {
                let (other, what) = threads
                    .iter()
                    .enumerate()
                    .find_map(|(t, s)| match s {
                        State::Wait(a) if !same(a) => {
                            Some((t, format!("waits at {}", a.describe())))
                        }
                        _ => None,
                    })
                    .expect("a thread not at the barrier");
                diverged(
                    state,
                    checked.is_some(),
                    (coords[t0], a0),
                    (waiting, n),
                    (coords[other], what),
                );
            }
            if checked.is_some() {
                check::end_interval();
            }
            let result = match kind {
                Some(kind) => {
                    interval += 1;
                    reduce(kind, &threads)
                }
                None => {
                    if matches!(threads[0], State::Done) {
                        super::exec::first_thread_left(state, &a0.location.to_string());
                    }
                    phase = cooperative::block_arrives(GridStop {
                        interval,
                        location: At::Call(a0.location),
                    });
                    interval = phase;
                    0
                }
            };
            for thread in threads.iter_mut() {
                if let State::Wait(_) = thread {
                    *thread = State::Run(result);
                }
            }
            if checked.is_some() && interval > check::MAX_INTERVAL {
                raise(format!(
                    "kernel `{}`, block {}: checked mode counts at most {} barriers per block",
                    state.kernel,
                    state.block,
                    check::MAX_INTERVAL
                ));
            }
        }
        stacks.extend(fibers.into_iter().map(|(fiber, _)| fiber.into_stack()));
    }
    STACKS.with(|s| *s.borrow_mut() = stacks);
}

/// The result of a barrier of `kind` at which every live thread waits: the count or vote of
/// their predicates (exited threads have none).
fn reduce(kind: BarrierKind, threads: &[State]) -> u64 {
    let mut preds = threads.iter().filter_map(|s| match s {
        State::Wait(a) => Some(a.value != 0),
        _ => None,
    });
    match kind {
        BarrierKind::Sync => 0,
        BarrierKind::Count => preds.filter(|&p| p).count() as u64,
        BarrierKind::And => preds.all(|p| p) as u64,
        BarrierKind::Or => preds.any(|p| p) as u64,
    }
}

/// Stops the block whose threads do not all wait at one barrier: `waiting` is a thread waiting
/// at a barrier, `count` how many of the block's threads wait there, `other` what one of the
/// others did instead.
#[cold]
fn diverged(
    state: &BlockState,
    checked: bool,
    waiting: (Dim3, Arrival),
    count: (usize, usize),
    other: (Dim3, String),
) -> ! {
    let finding = Finding::DivergentBarrier {
        block: state.block,
        barrier: waiting.1.describe(),
        waiting: waiting.0,
        count,
        other,
    };
    stop(checked, finding)
}

/// Stops the block with a collective that cannot complete.
#[cold]
pub(crate) fn warp_diverged(state: &BlockState, checked: bool, coords: &[Dim3], p: Problem) -> ! {
    let finding = Finding::DivergentWarp {
        block: state.block,
        collective: p.arrival.describe(),
        waiting: coords[p.thread],
        problem: p.what,
    };
    stop(checked, finding)
}

/// Stops the block with `finding`: a finding in checked mode, a fault's message otherwise.
fn stop(checked: bool, finding: Finding) -> ! {
    if checked {
        raise_finding(finding)
    }
    raise(finding.to_string())
}

/// Suspends the calling kernel thread at `arrival` until its block's scheduler resumes it;
/// returns the barrier's or collective's result, or `None` outside a coroutine.
pub(crate) fn suspend(arrival: Arrival) -> Option<u64> {
    let fiber = tls::FIBER.with(|c| c.get());
    if fiber.is_null() {
        return None;
    }
    // SAFETY: FIBER points at the yielder of the coroutine running on this OS thread; it is
    // set when the coroutine starts and restored below after every suspension.
    let yielder = unsafe { &*(fiber as *const Fiber) };
    let result = yielder.suspend(arrival);
    tls::FIBER.with(|c| c.set(fiber));
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
