//! How checked mode runs a launch: every thread tracked, each given to the shadow memory as it
//! runs ([`set_who`]), blocks over the workers' lanes ([`run_checked`]) or, for a cooperative
//! launch, all on one worker ([`run_checked_cooperative`]). Threads that meet at barriers run
//! on the same schedulers as the fast path, watched by a [`Checker`]: the block's number, its
//! threads' warp clocks, and the end of each barrier interval.

use super::clock::{self, WarpClock};
use super::{begin_block, end_interval, set_who, Lane, LaunchShadows, Who, MAX_INTERVAL};
use crate::base::WARP_SIZE;
use crate::cpu::exec::run_groups;
use crate::cpu::fault::{raise, KernelFault};
use crate::cpu::launch::context::{Ctx, Shadow};
use crate::cpu::launch::{block_state, ctx_of, thread_coords, tls, BlockState, LaunchSpec};
use crate::cpu::observer::Observer;
use crate::cpu::sched::cooperative;
use crate::cpu::sched::fibers::run_fibers;
use crate::dim::Dim3;
use std::cell::RefCell;
use std::sync::atomic::Ordering;

thread_local! {
    /// This worker's lane of shared memory in checked mode (cleared for every block).
    static SHARED_LANE: RefCell<Lane> = const { RefCell::new(Lane::shared()) };
}

/// Forgets the running checked thread when dropped (at a task's end, or as its fault unwinds),
/// so that nothing later on this worker is recorded as its.
pub(super) struct Forget;

impl Drop for Forget {
    fn drop(&mut self) {
        set_who(Who::default());
    }
}

/// Runs `body` for every thread of the launch in checked mode: every thread tracked, as
/// coroutines that meet at barriers when the kernel has them, the running thread's block,
/// barrier interval and thread given to the shadow memory (see [`check`](super)) that the kernel's
/// views record their accesses in, in the lanes of `shadows` that each worker claims; returns
/// the first fault or finding.
///
/// Block `b` (linear index) has the number `first + b` in the records, `first` being the
/// launch's first block on the clock.
pub(crate) fn run_checked(
    spec: &LaunchSpec,
    shadows: &LaunchShadows,
    body: CheckedBlock<'_>,
) -> Result<(), KernelFault> {
    let coords = thread_coords(spec.block);
    let first = shadows.first();
    run_groups(spec, &|blocks, shared, stop| {
        let _lanes = shadows.enter(blocks.start);
        let _who = Forget;
        SHARED_LANE.with(|lane| {
            let mut lane = lane.borrow_mut();
            for b in blocks {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let state = checked_block(spec, &mut lane, first, block_state(spec, b, shared));
                let block = first.wrapping_add(b as u32);
                match body {
                    CheckedBlock::Meeting(body) => {
                        let mut checker = Checker::new(block, coords.len());
                        run_fibers(&state, &coords, body, &mut checker);
                        warpgroups_done(&lane);
                    }
                    CheckedBlock::Threads(threads) => threads(&state, block),
                }
                end_interval();
            }
        })
    })
}

/// How checked mode runs a block's threads: as coroutines that meet at barriers and
/// collectives (`Meeting`, one thread), or one after another (`Threads`, the block `(state,
/// number)`: see the `serial` module).
#[derive(Clone, Copy)]
pub(crate) enum CheckedBlock<'a> {
    Meeting(&'a (dyn Fn(Ctx) + Sync)),
    Threads(&'a (dyn Fn(&BlockState, u32) + Sync)),
}

/// [`run_checked`] for a cooperative launch: every block on the calling thread, each with a
/// lane of its own for its shared memory, which lives as long as the block.
pub(crate) fn run_checked_cooperative(
    spec: &LaunchSpec,
    shadows: &LaunchShadows,
    body: &(dyn Fn(Ctx) + Sync),
) -> Result<(), KernelFault> {
    let coords = thread_coords(spec.block);
    let first = shadows.first();
    let _lanes = shadows.enter(0);
    // Every block runs on this thread (one worker).
    let _who = Forget;
    cooperative::launch(spec, 1, true, &|b, state| {
        let mut lane = Lane::shared();
        let state = checked_block(spec, &mut lane, first, *state);
        let mut checker = Checker::new(first.wrapping_add(b as u32), coords.len());
        run_fibers(&state, &coords, body, &mut checker);
        warpgroups_done(&lane);
        end_interval();
    })
}

/// At a block's end, stops the kernel where a warp of a warpgroup did not call an operation of
/// the warpgroup (`wgmma`) that another of its warps called.
fn warpgroups_done(lane: &Lane) {
    if let Some((step, by, lagging)) = lane.warpgroups().borrow().unfinished() {
        raise(format!(
            "{} at {}: warp {by} of the block calls it, but warp {lagging} of its warpgroup does \
             not (it returned, or called the warpgroup's operations fewer times): the four \
             warps of a warpgroup call each operation together",
            step.name, step.at
        ));
    }
}

/// Starts a block of a checked launch whose first block is `first`: its shared memory's `lane`
/// cleared; returns its `state` with the lane, made the current block.
fn checked_block(spec: &LaunchSpec, lane: &mut Lane, first: u32, state: BlockState) -> BlockState {
    if let Err(e) = lane.reset_shared(
        crate::cpu::launch::sites::block_bytes(spec.shared_bytes),
        first,
    ) {
        raise(format!("{e} of the block's shared memory"));
    }
    begin_block();
    let state = BlockState {
        shared_shadow: Shadow(&*lane as *const Lane as *const ()),
        ..state
    };
    tls::BLOCK.with(|c| c.set(state));
    state
}

/// Checked mode's observer of a block whose threads run as coroutines: gives each thread to the
/// shadow memory as it resumes, keeps each thread's warp clock (the order `syncwarp` gives its
/// accesses), and ends the block's barrier interval as a barrier opens.
pub(crate) struct Checker {
    /// The block's number in the records.
    block: u32,
    /// Each thread's warp clock, by linear index.
    clocks: Vec<WarpClock>,
}

impl Checker {
    /// The observer of block number `block`, of `threads` threads.
    pub(crate) fn new(block: u32, threads: usize) -> Checker {
        let lanes = (0..threads).map(|t| clock::start(t % WARP_SIZE as usize));
        Checker {
            block,
            clocks: lanes.collect(),
        }
    }
}

impl Observer for Checker {
    const CHECKED: bool = true;

    fn resume(&mut self, t: usize, interval: u32, phase: u32) {
        set_who(Who {
            block: self.block,
            interval,
            thread: t as u32,
            epoch: self.clocks[t][t % WARP_SIZE as usize],
            phase,
        });
        // The clocks change only between rounds, while no thread runs.
        clock::set_current(&self.clocks[t]);
    }

    fn pause(&mut self) {
        clock::set_current(std::ptr::null());
    }

    fn syncwarp(&mut self, first: usize, lanes: usize, mask: u32) {
        clock::join(&mut self.clocks[first..first + lanes], mask);
    }

    fn barrier(&mut self) {
        end_interval();
    }

    fn entered(&mut self, state: &BlockState, interval: u32) {
        if interval > MAX_INTERVAL {
            raise(format!(
                "kernel `{}`, block {}: checked mode counts at most {MAX_INTERVAL} barriers per \
                 block",
                state.kernel, state.block
            ));
        }
    }
}

/// Checked mode's run of the threads of the block `state`, which is the launch's block number
/// `block`, one after another, each given to the shadow memory. Compiled once, the body called
/// through its pointer: checked mode's price is the records a thread keeps, not the call.
pub(crate) fn serial_block(state: &BlockState, block: u32, body: &dyn Fn(Ctx)) {
    let d = state.block_dim;
    let mut t = 0;
    for z in 0..d.z {
        for y in 0..d.y {
            for x in 0..d.x {
                set_who(Who {
                    block,
                    interval: 0,
                    thread: t,
                    epoch: 0,
                    phase: 0,
                });
                let thread = Dim3::new(x, y, z);
                tls::set_thread(thread);
                body(ctx_of(state, thread));
                t += 1;
            }
        }
    }
}
