//! Warp collectives of a split kernel: the lanes of a warp run the statements between two
//! collectives as one thread loop, then meet at the collective all at once, with no coroutine
//! to switch to.
//!
//! The `#[kernel]` macro turns each collective of a body it splits into two steps: in a thread
//! loop, each lane evaluates the collective's operands with the function of the same name and
//! signature in [`operands`]; then [`BlockRun::exchange`] gives every lane its result, from
//! the operands of the lanes of its mask, after the checks [`complete`](super::sched::warp::complete)
//! makes for coroutines.

use super::exec::BlockRun;
use super::sched::rendezvous::{Arrival, Meet, WarpOp};
use super::sched::warp::{self, each_lane, existing, leaves_out, meet_at, results, Problem};
use crate::base::WARP_SIZE;
use crate::cpu::slots::Slots;
use std::panic::Location;

/// One lane's operands of a collective, where the collective is, and how its result bits
/// become the collective's result (a `T`).
///
/// Only the functions of [`operands`] make one, and only they require the operands' types to
/// be a collective's: what an `Operands` goes through afterwards has no bound that could fail,
/// so a misuse is reported once, at the call, however many versions of the kernel's body
/// (split, coroutines, checked) call it.
pub struct Operands<T> {
    op: WarpOp,
    mask: u32,
    bits: u64,
    arg: u32,
    location: &'static Location<'static>,
    /// The results of the lanes of a warp from their result bits.
    results: fn([u64; 32]) -> [T; 32],
}

// Copied whatever `T` is (a derive would ask `T: Copy`): every field is.
impl<T> Clone for Operands<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Operands<T> {}

impl<T> Operands<T> {
    /// The collective, met as a coroutine (or by a thread alone in its block).
    #[inline(always)]
    pub fn meet(self) -> T {
        let bits = meet_at(self.op, self.mask, self.bits, self.arg, self.location);
        let [result, ..] = (self.results)([bits; 32]);
        result
    }
}

/// The operands of each collective, as its lanes pass them: the same names and signatures as
/// the collectives of [`crate::warp`], so that a misuse reads the same.
pub mod operands {
    use super::Operands;
    use crate::base::WarpValue;
    use crate::cpu::sched::rendezvous::{ShflMode, WarpOp};
    use std::panic::Location;

    type Results<T> = fn([u64; 32]) -> [T; 32];

    #[track_caller]
    fn of<T>(op: WarpOp, mask: u32, bits: u64, arg: u32, results: Results<T>) -> Operands<T> {
        Operands {
            op,
            mask,
            bits,
            arg,
            location: Location::caller(),
            results,
        }
    }

    /// A shuffle's operands: `value` and the shuffle's lane argument, its result a `T`.
    #[track_caller]
    fn shfl<T: WarpValue>(mode: ShflMode, mask: u32, value: T, arg: u32) -> Operands<T> {
        of(WarpOp::Shfl(mode), mask, value.to_bits(), arg, |b| {
            b.map(T::from_bits)
        })
    }

    /// A vote's operands: the lane's predicate, its result a `bool`.
    #[track_caller]
    fn vote(op: WarpOp, mask: u32, pred: bool) -> Operands<bool> {
        of(op, mask, pred as u64, 0, |b| b.map(|b| b != 0))
    }

    /// The operands of [`shfl_sync`](crate::warp::shfl_sync).
    #[track_caller]
    pub fn shfl_sync<T: WarpValue>(mask: u32, value: T, src_lane: u32) -> Operands<T> {
        shfl(ShflMode::Idx, mask, value, src_lane)
    }

    /// The operands of [`shfl_up_sync`](crate::warp::shfl_up_sync).
    #[track_caller]
    pub fn shfl_up_sync<T: WarpValue>(mask: u32, value: T, delta: u32) -> Operands<T> {
        shfl(ShflMode::Up, mask, value, delta)
    }

    /// The operands of [`shfl_down_sync`](crate::warp::shfl_down_sync).
    #[track_caller]
    pub fn shfl_down_sync<T: WarpValue>(mask: u32, value: T, delta: u32) -> Operands<T> {
        shfl(ShflMode::Down, mask, value, delta)
    }

    /// The operands of [`shfl_xor_sync`](crate::warp::shfl_xor_sync).
    #[track_caller]
    pub fn shfl_xor_sync<T: WarpValue>(mask: u32, value: T, lane_mask: u32) -> Operands<T> {
        shfl(ShflMode::Xor, mask, value, lane_mask)
    }

    /// The operands of [`ballot_sync`](crate::warp::ballot_sync).
    #[track_caller]
    pub fn ballot_sync(mask: u32, pred: bool) -> Operands<u32> {
        of(WarpOp::Ballot, mask, pred as u64, 0, |b| {
            b.map(|b| b as u32)
        })
    }

    /// The operands of [`all_sync`](crate::warp::all_sync).
    #[track_caller]
    pub fn all_sync(mask: u32, pred: bool) -> Operands<bool> {
        vote(WarpOp::All, mask, pred)
    }

    /// The operands of [`any_sync`](crate::warp::any_sync).
    #[track_caller]
    pub fn any_sync(mask: u32, pred: bool) -> Operands<bool> {
        vote(WarpOp::Any, mask, pred)
    }

    /// The operands of [`eq_sync`](crate::warp::eq_sync).
    #[track_caller]
    pub fn eq_sync(mask: u32, pred: bool) -> Operands<bool> {
        vote(WarpOp::Eq, mask, pred)
    }

    /// The operands of [`match_any_sync`](crate::warp::match_any_sync).
    #[track_caller]
    pub fn match_any_sync<T: WarpValue>(mask: u32, value: T) -> Operands<u32> {
        of(WarpOp::MatchAny, mask, value.to_bits(), 0, |b| {
            b.map(|b| b as u32)
        })
    }

    /// The operands of [`match_all_sync`](crate::warp::match_all_sync).
    #[track_caller]
    pub fn match_all_sync<T: WarpValue>(mask: u32, value: T) -> Operands<(u32, bool)> {
        of(WarpOp::MatchAll, mask, value.to_bits(), 0, |b| {
            b.map(|b| (b as u32, b != 0))
        })
    }

    /// The operands of [`syncwarp`](crate::warp::syncwarp).
    #[track_caller]
    pub fn syncwarp(mask: u32) -> Operands<()> {
        of(WarpOp::Sync, mask, 0, 0, |b| b.map(|_| ()))
    }
}

impl BlockRun<'_> {
    /// The lanes of the warp whose first thread is `first` that exist and have not exited.
    #[inline(always)]
    pub fn live_lanes(&self, exited: &[bool], some_exited: bool, first: usize) -> u32 {
        let all = existing(0, (self.threads() - first) as u32);
        if !some_exited {
            return all;
        }
        each_lane(all)
            .filter(|&l| !exited[first + l])
            .fold(0, |m, l| m | 1 << l)
    }

    /// The collective that the lanes `active` of the warp whose first thread is `first` have
    /// reached together, each with its operands in `operands` (by thread): each lane's result
    /// (an inactive lane's is meaningless), or `None` when no lane is active. `exited` says
    /// which threads have returned.
    ///
    /// The lanes of a mask that do not exist or have returned take no part, as on a GPU, nor
    /// do the lanes `gone`, which will return without meeting again (they took the other way
    /// around the collective, and nothing after it meets). Every other lane of an active lane's
    /// mask must be active, with the same mask (up to those lanes), and the mask must name the
    /// caller. Otherwise the kernel stops with the report a coroutine gets.
    pub fn exchange<T>(
        &self,
        first: usize,
        active: u32,
        gone: u32,
        exited: &[bool],
        operands: &Slots<Operands<T>>,
    ) -> Option<[T; 32]> {
        let mut lanes = [(0u64, 0u32); 32];
        let mut masks = [0u32; 32];
        if active == 0 {
            return None;
        }
        for l in each_lane(active) {
            // SAFETY: every active lane evaluated its operands in the thread loop before.
            let o = unsafe { operands.get(first + l) };
            lanes[l] = (o.bits, o.arg);
            masks[l] = o.mask;
        }
        let lead = active.trailing_zeros() as usize;
        // SAFETY: as above, for the first active lane.
        let one = unsafe { operands.get(first + lead) };
        // The common case: every active lane names exactly the active lanes.
        let mask = masks[lead];
        if mask == active && (0..32).all(|k| masks[k] == mask || active & 1 << k == 0) {
            return Some((one.results)(results(one.op, mask, &lanes)));
        }
        // The lanes that can take part: those that exist and have not returned.
        let live = each_lane(existing(0, (self.threads() - first) as u32) & !gone)
            .filter(|&l| !exited[first + l])
            .fold(0u32, |m, l| m | 1 << l);
        let mut out = [0u64; 32];
        // Lanes whose result is known: a mask's group at a time.
        let mut done = 0u32;
        for l in each_lane(active) {
            if done & 1 << l != 0 {
                continue;
            }
            let mask = masks[l] & live;
            let same = (0..32)
                .filter(|&k| masks[k] & live == mask)
                .fold(0u32, |m, k| m | 1 << k);
            if masks[l] & 1 << l == 0 || mask & !(active & same) != 0 {
                let arrival = Arrival {
                    meet: Meet::Warp(one.op),
                    value: lanes[l].0,
                    mask: masks[l],
                    arg: lanes[l].1,
                    location: one.location,
                };
                self.warp_diverged(first, l, arrival, live, active, &masks);
            }
            let group = results(one.op, mask, &lanes);
            for k in each_lane(mask) {
                out[k] = group[k];
            }
            done |= mask;
        }
        Some((one.results)(out))
    }

    /// Stops the kernel: lane `l` of the warp whose first thread is `first` waits at `arrival`,
    /// which cannot complete; `live` are the warp's lanes that exist and have not returned,
    /// `active` and `masks` its lanes at the collective and their masks.
    #[cold]
    fn warp_diverged(
        &self,
        first: usize,
        l: usize,
        arrival: Arrival,
        live: u32,
        active: u32,
        masks: &[u32; 32],
    ) -> ! {
        let mask = arrival.mask & live;
        let lanes = (self.threads() - first).min(WARP_SIZE as usize);
        let stray = (0..lanes)
            .find(|&k| mask & 1 << k != 0 && (active & 1 << k == 0 || masks[k] & live != mask));
        let what = match stray {
            _ if arrival.mask & 1 << l == 0 => leaves_out(arrival.mask, l),
            Some(k) => {
                let other = self.coords[first + k];
                if active & 1 << k != 0 {
                    let theirs = Arrival {
                        mask: masks[k],
                        ..arrival
                    };
                    format!("lane {k} (thread {other}) waits at {}", theirs.describe())
                } else {
                    format!(
                        "lane {k} (thread {other}) is not there: it left a `while` loop, or took \
                         the other branch of an `if`, around it"
                    )
                }
            }
            None => unreachable!("a collective that cannot complete has a lane that stays away"),
        };
        let problem = Problem {
            thread: first + l,
            arrival,
            what,
        };
        warp::diverged(self.state, false, self.coords, problem)
    }
}

#[cfg(test)]
mod tests {
    use super::operands::{ballot_sync, shfl_xor_sync};
    use super::*;
    use crate::cpu::fault::{self, KernelFault};
    use crate::cpu::launch::BlockState;
    use crate::dim::Dim3;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// A block of `n` threads in a row.
    fn block(n: u32) -> (BlockState, Vec<Dim3>) {
        let state = BlockState {
            kernel: "k",
            block_dim: Dim3::new(n, 1, 1),
            ..BlockState::NONE
        };
        (state, (0..n).map(|x| Dim3::new(x, 0, 0)).collect())
    }

    /// Each lane's operands, by `of(lane)`.
    fn slots<T>(n: usize, of: impl Fn(u32) -> Operands<T>) -> Slots<Operands<T>> {
        let mut s = Slots::new(n);
        for t in 0..n {
            // SAFETY: `t < n`.
            unsafe { s.set(t, of(t as u32 % 32)) };
        }
        s
    }

    /// The message an exchange stops the kernel with.
    fn report(f: impl FnOnce()) -> String {
        let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the exchange must stop");
        match fault::describe(payload) {
            KernelFault::Message(m) => m,
            other => panic!("expected a message: {other:?}"),
        }
    }

    #[test]
    fn each_mask_is_a_group_of_its_own() {
        let (state, coords) = block(64);
        let run = BlockRun {
            state: &state,
            coords: &coords,
            track: false,
        };
        // Each half of the second warp sums its own lanes' values.
        let half = |l: u32| if l < 16 { 0x0000_ffff } else { 0xffff_0000 };
        let ops = slots(64, |l| shfl_xor_sync(half(l), 100 + l, 1));
        let got = run.exchange(32, u32::MAX, 0, &[false; 64], &ops).unwrap();
        assert_eq!((got[0], got[1], got[15], got[16]), (101, 100, 114, 117));
        // Only the active lanes vote, and only they get a result.
        let ops = slots(64, |l| ballot_sync(0x0000_00f0, l % 2 == 1));
        let got = run.exchange(0, 0x0000_00f0, 0, &[false; 64], &ops).unwrap();
        assert_eq!((got[4], got[7], got[8]), (0xa0, 0xa0, 0));
        assert!(run.exchange(0, 0, 0, &[false; 64], &ops).is_none());
    }

    #[test]
    fn a_lane_that_does_not_come_is_reported_one_returned_or_absent_takes_no_part() {
        let (state, coords) = block(48);
        let run = BlockRun {
            state: &state,
            coords: &coords,
            track: false,
        };
        let full = slots(48, |l| ballot_sync(u32::MAX, l > 2));
        let mut exited = [false; 48];
        exited[5] = true;
        let got = run.exchange(0, !(1 << 5), 0, &exited, &full).unwrap();
        assert_eq!(got[0], !0b111 & !(1 << 5));
        // The block's last warp has 16 lanes: a full mask names 16 that do not exist.
        let got = run.exchange(32, 0xffff, 0, &[false; 48], &full).unwrap();
        assert_eq!(got[0], 0xffff & !0b111);
        let msg = report(|| {
            run.exchange(0, !(1 << 6), 0, &[false; 48], &full);
        });
        assert!(
            msg.contains("thread (0, 0, 0) waits at ballot_sync(0xffffffff) at"),
            "{msg}"
        );
        assert!(
            msg.contains("lane 6 (thread (6, 0, 0)) is not there: it left a `while`"),
            "{msg}"
        );
        let mixed = slots(48, |l| {
            ballot_sync(if l == 9 { 0x3ff } else { u32::MAX }, true)
        });
        let msg = report(|| {
            run.exchange(0, u32::MAX, 0, &[false; 48], &mixed);
        });
        assert!(
            msg.contains("lane 9 (thread (9, 0, 0)) waits at ballot_sync(0x000003ff)"),
            "{msg}"
        );
        let selfless = slots(48, |l| ballot_sync(if l == 0 { 2 } else { u32::MAX }, true));
        let msg = report(|| {
            run.exchange(0, 1, 0, &[false; 48], &selfless);
        });
        assert!(msg.contains("leaves out its own lane 0"), "{msg}");
    }
}
