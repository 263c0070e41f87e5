//! A block's threads as coroutines that meet at barriers and warp collectives.
//!
//! Kernels with barriers or warp collectives that the `#[kernel]` macro does not split into
//! thread loops run each thread of a block as a coroutine on a small stack of its own. In each
//! round every thread that can run does, until it returns or stops at a barrier, a collective
//! or `activemask()`. Then the collectives whose lanes have all come complete
//! ([`warp::complete`]) and their lanes run on; once no collective is left, every live thread
//! must wait at one barrier, which opens. A barrier that part of the block never reaches, or a
//! collective that a lane of its mask never reaches, is reported instead of hanging.
//!
//! The block's [`Observer`] hears of each thread as it resumes and of each barrier as it
//! opens: nothing on the fast path, the shadow memory's records in checked mode.

use super::overflow::{self, guard_at, stack_size, Guarded};
use super::rendezvous::{
    block_arrives, first_thread_left, Arrival, At, BarrierKind, Fiber, GridStop, Meet, State, FIBER,
};
use super::warp;
use crate::cpu::fault::{self, raise};
use crate::cpu::finding::Finding;
use crate::cpu::launch::context::Ctx;
use crate::cpu::launch::{ctx_of, tls, BlockState};
use crate::cpu::observer::Observer;
use crate::dim::Dim3;
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult};
use std::cell::RefCell;

thread_local! {
    /// This worker's coroutine stacks (reused by every block it runs).
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// A thread's coroutine, and the guard page below its stack.
type Thread = (Coroutine<u64, Arrival, (), DefaultStack>, (usize, usize));

/// Runs the block's threads as coroutines that meet at barriers and collectives, telling
/// `observer` of each thread as it resumes and of each barrier as it opens.
pub(crate) fn run_fibers<O: Observer>(
    state: &BlockState,
    coords: &[Dim3],
    body: &(dyn Fn(Ctx) + Sync),
    observer: &mut O,
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
        let fibers: Vec<Thread> = stacks
            .drain(..n)
            .enumerate()
            .map(|(t, stack)| {
                let ctx = ctx_of(state, coords[t]);
                let guard = guard_at(stack.limit().get());
                let fiber = Coroutine::with_stack(stack, move |y: &Fiber, _: u64| {
                    FIBER.with(|c| c.set(y as *const Fiber as *const ()));
                    // SAFETY: `body` outlives every coroutine (see above).
                    unsafe { (*body)(ctx) }
                });
                (fiber, guard)
            })
            .collect();
        let mut block = Block {
            state,
            coords,
            fibers,
            threads: vec![State::Run(0); n],
            interval: 0,
            phase: 0,
            mailbox: Vec::new(),
        };
        while block.round(observer) {}
        stacks.extend(
            block
                .fibers
                .into_iter()
                .map(|(fiber, _)| fiber.into_stack()),
        );
    }
    STACKS.with(|s| *s.borrow_mut() = stacks);
}

/// A block whose threads run as coroutines, between rounds.
struct Block<'a> {
    state: &'a BlockState,
    coords: &'a [Dim3],
    fibers: Vec<Thread>,
    threads: Vec<State>,
    /// How many barriers the block has passed.
    interval: u32,
    /// The interval at which the block's current phase of a cooperative launch started.
    phase: u32,
    /// Where the warps' gathered posts wait for their lanes (see [`warp::gather`]).
    mailbox: Vec<u64>,
}

impl Block<'_> {
    /// Runs every thread that can, then completes the collectives or opens the barrier that
    /// every live thread waits at; returns whether any thread is left to run.
    fn round<O: Observer>(&mut self, observer: &mut O) -> bool {
        self.resume_all(observer);
        // Collectives first: their lanes may have barriers still to reach.
        match warp::complete(&mut self.threads, self.coords, observer, &mut self.mailbox) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(p) => warp::diverged(self.state, O::CHECKED, self.coords, p),
        }
        match self
            .threads
            .iter()
            .position(|s| matches!(s, State::Wait(_)))
        {
            Some(t0) => {
                self.open(t0, observer);
                true
            }
            None => false,
        }
    }

    /// Resumes each thread that can run until it returns or stops.
    fn resume_all<O: Observer>(&mut self, observer: &mut O) {
        for t in 0..self.threads.len() {
            let State::Run(input) = self.threads[t] else {
                continue;
            };
            tls::set_thread(self.coords[t]);
            observer.resume(t, self.interval, self.phase);
            let (fiber, (low, high)) = &mut self.fibers[t];
            let running = overflow::Running::enter(Guarded {
                trap: fiber.trap_handler(),
                low: *low,
                high: *high,
            });
            let result = fiber.resume(input);
            drop(running);
            self.threads[t] = match result {
                CoroutineResult::Yield(a) => State::Wait(a),
                CoroutineResult::Return(()) => State::Done,
            };
        }
        observer.pause();
    }

    /// Opens the barrier that thread `t0` waits at, once every live thread waits there (in
    /// checked mode: at the same line); a thread that has exited counts as arrived, as on a
    /// GPU. Reports the block's divergence otherwise.
    fn open<O: Observer>(&mut self, t0: usize, observer: &mut O) {
        let State::Wait(a0) = self.threads[t0] else {
            unreachable!("the caller found thread t0 waiting")
        };
        let same = |a: &Arrival| a.meet == a0.meet && (!O::CHECKED || a.location == a0.location);
        let n = self.threads.len();
        let waiting = self
            .threads
            .iter()
            .filter(|s| matches!(s, State::Wait(a) if same(a)));
        let waiting = waiting.count();
        let exited = self.threads.iter().filter(|s| matches!(s, State::Done));
        if waiting + exited.count() < n {
            let (other, what) = self
                .threads
                .iter()
                .enumerate()
                .find_map(|(t, s)| match s {
                    State::Wait(a) if !same(a) => Some((t, format!("waits at {}", a.describe()))),
                    _ => None,
                })
                .expect("a thread not at the barrier");
            let other = (self.coords[other], what);
            diverged(
                self.state,
                O::CHECKED,
                (self.coords[t0], a0),
                (waiting, n),
                other,
            );
        }
        observer.barrier();
        let result = match a0.meet {
            Meet::Barrier(kind) => {
                self.interval += 1;
                reduce(kind, &self.threads)
            }
            Meet::Grid => {
                if matches!(self.threads[0], State::Done) {
                    first_thread_left(self.state, &a0.location.to_string());
                }
                self.phase = block_arrives(GridStop {
                    interval: self.interval,
                    location: At::Call(a0.location),
                });
                self.interval = self.phase;
                0
            }
            _ => unreachable!("warp::complete leaves no collective waiting"),
        };
        for thread in self.threads.iter_mut() {
            if let State::Wait(_) = thread {
                *thread = State::Run(result);
            }
        }
        observer.entered(self.state, self.interval);
    }
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
    fault::stop(checked, finding)
}
