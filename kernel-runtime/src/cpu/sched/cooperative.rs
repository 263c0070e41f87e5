//! Cooperative launches on the CPU backend: every block of the grid alive at once, so that the
//! grid's threads can meet at grid barriers (`grid_sync()`).
//!
//! Each block runs as a coroutine on a stack of its own, its threads as coroutines inside it
//! (see [`fibers`](super::fibers)). The blocks are split into one run of consecutive blocks per worker, each
//! worker an OS thread. In a phase, a worker resumes each of its blocks until the block returns
//! or stops with every thread at a grid barrier; then the workers meet, and the last to arrive
//! decides: the next phase (every block stopped), the end (every block returned), or an error
//! (some stopped while others returned, or a block faulted). A grid barrier that part of the
//! grid never reaches is reported, never a hang.
//!
//! Checked mode runs the blocks on one worker, so that its shadow sees every access in the
//! order they ran; a grid barrier starts a phase whose accesses are ordered after every access
//! of the phases before it (see [`check`](crate::cpu::check)).

use super::overflow::{self, guard_at, stack_size, Guarded};
use super::rendezvous::{BlockYielder, GridStop, BLOCK, FIBER};
use crate::cpu::fault::{self, KernelFault};
use crate::cpu::finding::Finding;
use crate::cpu::launch::{block_state, tls, BlockState, LaunchSpec};
use crate::dim::Dim3;
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The most threads a cooperative launch may have on the CPU backend: every thread of the grid
/// is a coroutine with a stack of its own, alive from the launch's start to its end.
pub(crate) const MAX_THREADS: u64 = 16_384;

/// How many blocks of `threads` threads a cooperative launch may have on the CPU backend.
pub(crate) fn max_blocks(threads: u64) -> u64 {
    MAX_THREADS / threads.max(1)
}

/// A block's coroutine, and the guard page below its stack.
type BlockCoroutine = (Coroutine<u32, GridStop, (), DefaultStack>, (usize, usize));

/// Runs a cooperative launch: `per_block(b, state)` runs block `b` (linear index) to its end,
/// its threads meeting at grid barriers through [`block_arrives`]; `workers` OS threads share
/// the blocks. Returns the first fault, or the divergent grid barrier (a finding where
/// `checked`).
pub(crate) fn launch(
    spec: &LaunchSpec,
    workers: usize,
    checked: bool,
    per_block: &(dyn Fn(u64, &BlockState) + Sync),
) -> Result<(), KernelFault> {
    let blocks = spec.grid.volume();
    let workers = (workers as u64).clamp(1, blocks.max(1));
    let meeting = Meeting {
        workers: workers as usize,
        blocks,
        checked,
        round: Mutex::new(Round::default()),
        turned: Condvar::new(),
    };
    let share = |w: u64| w * blocks / workers..(w + 1) * blocks / workers;
    std::thread::scope(|scope| {
        for w in 1..workers {
            let meeting = &meeting;
            scope.spawn(move || work(spec, share(w), meeting, per_block));
        }
        work(spec, share(0), &meeting, per_block);
    });
    let fault = lock(&meeting.round).fault.take();
    match fault {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// One worker: its blocks, phase after phase, until the meeting ends the launch.
fn work(
    spec: &LaunchSpec,
    range: Range<u64>,
    meeting: &Meeting,
    per_block: &(dyn Fn(u64, &BlockState) + Sync),
) {
    let panics = fault::KernelPanics::begin();
    let mut shared: Vec<Vec<u128>> = range
        .clone()
        .map(|_| {
            vec![0u128; crate::cpu::launch::sites::block_bytes(spec.shared_bytes).div_ceil(16)]
        })
        .collect();
    // SAFETY: the lifetime is erased only to meet the coroutines' `'static` bound; every
    // coroutine is dropped (returned or force-unwound) before this function returns, while
    // `per_block` is still borrowed.
    let per_block: *const (dyn Fn(u64, &BlockState) + Sync + 'static) = unsafe {
        std::mem::transmute::<
            *const (dyn Fn(u64, &BlockState) + Sync + '_),
            *const (dyn Fn(u64, &BlockState) + Sync + 'static),
        >(per_block)
    };
    let mut tally = Tally::default();
    let mut live: Vec<(u64, BlockCoroutine)> = Vec::new();
    overflow::install();
    for (b, buf) in range.zip(shared.iter_mut()) {
        let state = block_state(spec, b, buf.as_mut_ptr() as *mut u8);
        // A split kernel's thread loops run on the block's stack: as large as a thread's.
        match DefaultStack::new(stack_size()) {
            Ok(stack) => {
                let guard = guard_at(stack.limit().get());
                let co = Coroutine::with_stack(stack, move |y: &BlockYielder, _: u32| {
                    BLOCK.with(|c| c.set(y as *const BlockYielder as *const ()));
                    tls::BLOCK.with(|c| c.set(state));
                    // SAFETY: `per_block` outlives every coroutine (see above).
                    unsafe { (*per_block)(b, &state) }
                });
                live.push((b, (co, guard)));
            }
            Err(e) => {
                tally.fault = Some(KernelFault::Message(format!(
                    "kernel `{}`: cannot allocate a stack for block {b}: {e}",
                    spec.kernel
                )));
                break;
            }
        }
    }
    let mut next = 0;
    loop {
        if tally.fault.is_none() {
            run_phase(spec, &mut live, next, &mut tally);
        }
        match meeting.meet(std::mem::take(&mut tally)) {
            Decision::Next(interval) => next = interval,
            Decision::Finish | Decision::Stop => break,
        }
    }
    // Blocks still suspended are unwound here, before `per_block`'s borrow ends.
    drop(live);
    drop(panics);
    tls::BLOCK.with(|c| c.set(BlockState::NONE));
    FIBER.with(|c| c.set(std::ptr::null()));
    BLOCK.with(|c| c.set(std::ptr::null()));
}

/// Resumes each live block with `next` until it stops at a grid barrier or returns; a block
/// that returns leaves `live`. Stops at the first fault.
fn run_phase(
    spec: &LaunchSpec,
    live: &mut Vec<(u64, BlockCoroutine)>,
    next: u32,
    tally: &mut Tally,
) {
    let mut k = 0;
    while k < live.len() {
        let (b, (co, (low, high))) = &mut live[k];
        let block = spec.grid.unflatten(*b);
        // An overflow of the block's own stack (a split kernel's thread loops) is a fault; its
        // threads' coroutines guard their own stacks.
        let running = overflow::Running::enter(Guarded {
            trap: co.trap_handler(),
            low: *low,
            high: *high,
        });
        let result = catch_unwind(AssertUnwindSafe(|| co.resume(next)));
        drop(running);
        match result {
            Ok(CoroutineResult::Yield(stop)) => {
                tally.waiting += 1;
                tally.interval = tally.interval.max(stop.interval.saturating_add(1));
                tally.waiter.get_or_insert((block, stop));
                k += 1;
            }
            Ok(CoroutineResult::Return(())) => {
                tally.done += 1;
                tally.exited.get_or_insert(block);
                live.swap_remove(k);
            }
            Err(payload) => {
                tally.fault = Some(fault::describe(payload));
                live.swap_remove(k);
                return;
            }
        }
    }
}

/// What one worker's blocks did in a phase.
#[derive(Default)]
struct Tally {
    /// Blocks stopped at a grid barrier, and one of them.
    waiting: u64,
    waiter: Option<(Dim3, GridStop)>,
    /// Blocks that returned, and one of them.
    done: u64,
    exited: Option<Dim3>,
    /// The interval the next phase starts at: past every stopped block's.
    interval: u32,
    fault: Option<KernelFault>,
}

/// What the workers do after a meeting.
#[derive(Clone, Copy, Debug, Default)]
enum Decision {
    /// Every block stopped at a grid barrier: the next phase, from this interval.
    Next(u32),
    /// Every block returned.
    #[default]
    Finish,
    /// A fault, or a divergent grid barrier: the launch ends with it.
    Stop,
}

/// The workers' meeting point after each phase: a barrier that adds up their tallies.
struct Meeting {
    workers: usize,
    blocks: u64,
    /// Whether a divergent grid barrier is a finding (checked mode) or a fault's message.
    checked: bool,
    round: Mutex<Round>,
    turned: Condvar,
}

/// The tallies of the workers that have arrived, and the decision of the last round.
#[derive(Default)]
struct Round {
    arrived: usize,
    generation: u64,
    sum: Tally,
    decision: Decision,
    /// The launch's first fault (kept once the round is over).
    fault: Option<KernelFault>,
}

impl Meeting {
    /// Adds a worker's `tally`; waits for the others; returns the round's decision.
    fn meet(&self, tally: Tally) -> Decision {
        let mut round = lock(&self.round);
        let sum = &mut round.sum;
        sum.waiting += tally.waiting;
        sum.done += tally.done;
        sum.interval = sum.interval.max(tally.interval);
        sum.waiter = sum.waiter.or(tally.waiter);
        sum.exited = sum.exited.or(tally.exited);
        if let Some(fault) = tally.fault {
            sum.fault.get_or_insert(fault);
        }
        round.arrived += 1;
        if round.arrived == self.workers {
            let sum = std::mem::take(&mut round.sum);
            let (decision, fault) = self.decide(sum);
            round.fault = round.fault.take().or(fault);
            round.decision = decision;
            round.arrived = 0;
            round.generation += 1;
            self.turned.notify_all();
            return decision;
        }
        let generation = round.generation;
        while round.generation == generation {
            round = self.turned.wait(round).unwrap_or_else(|e| e.into_inner());
        }
        round.decision
    }

    /// The decision on a phase whose blocks did `sum`, and the fault it ends with.
    fn decide(&self, sum: Tally) -> (Decision, Option<KernelFault>) {
        if sum.fault.is_some() {
            return (Decision::Stop, sum.fault);
        }
        match (sum.waiter, sum.exited) {
            (None, _) => (Decision::Finish, None),
            (Some(_), None) => (Decision::Next(sum.interval), None),
            (Some((waiting, stop)), Some(exited)) => {
                let finding = Finding::DivergentGridBarrier {
                    barrier: format!("grid_sync() at {}", stop.location),
                    waiting,
                    count: (sum.waiting, self.blocks),
                    exited,
                };
                let fault = match self.checked {
                    true => KernelFault::Finding(Box::new(finding)),
                    false => KernelFault::Message(finding.to_string()),
                };
                (Decision::Stop, Some(fault))
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
