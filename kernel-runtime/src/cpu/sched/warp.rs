//! Warp collectives on the CPU backend: which lanes meet, and what each gets.
//!
//! A thread that calls a collective stops there (see [`fibers`](super::fibers)). Once every
//! thread of the block has stopped, [`complete`] looks at each warp: a collective completes
//! when every lane of its mask waits at the same collective with the same mask, and each of
//! those lanes is resumed with its result. As on a GPU, lanes that do not exist (the warp is the
//! block's last and partial) or have returned take no part: they count as arrived, so
//! `syncwarp(0xffffffff)` serves a block of 10 threads. A lane of the mask that waits at a
//! barrier or another collective would hang or be undefined on a GPU, and is reported instead.

use super::rendezvous::{suspend, wait, Arrival, Meet, ShflMode, State, WarpOp};
use crate::base::WARP_SIZE;
use crate::cpu::fault;
use crate::cpu::finding::Finding;
use crate::cpu::launch::{tls, BlockState};
use crate::cpu::observer::{Observer, Unobserved};
use crate::dim::Dim3;
use std::panic::Location;

/// The running thread's linear index in its block and the block's thread count.
fn linear() -> (u32, u32) {
    let (t, d) = (tls::thread(), tls::block().block_dim);
    (d.flatten(t), d.volume().max(1) as u32)
}

/// The running thread's lane.
pub(crate) fn lane_id() -> u32 {
    linear().0 % WARP_SIZE
}

/// The lanes of `count` threads' warp `warp` that exist.
pub(crate) fn existing(warp: u32, count: u32) -> u32 {
    let lanes = count.saturating_sub(warp * WARP_SIZE).min(WARP_SIZE);
    if lanes == WARP_SIZE {
        u32::MAX
    } else {
        (1 << lanes) - 1
    }
}

/// The lanes of `mask`, lowest first.
#[inline(always)]
pub fn each_lane(mask: u32) -> impl Iterator<Item = usize> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        let l = rest.trailing_zeros() as usize;
        rest &= rest.wrapping_sub(1);
        (l < 32).then_some(l)
    })
}

/// `activemask()`: in a coroutine, once every thread of the block has stopped, the lanes of the
/// warp that stopped at the same `activemask()` call (see [`complete`]); elsewhere (threads run
/// one after another), the lanes of the warp that exist.
#[track_caller]
pub(crate) fn activemask() -> u32 {
    let arrival = Arrival {
        meet: Meet::ActiveMask,
        value: 0,
        mask: 0,
        arg: 0,
        location: Location::caller(),
    };
    match suspend(arrival) {
        Some(mask) => mask as u32,
        None => {
            let (t, n) = linear();
            existing(t / WARP_SIZE, n)
        }
    }
}

thread_local! {
    /// The mailbox of the threads alone in their blocks (see [`gather`]).
    static MAILBOX: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A collective reached by the running thread: waits for the lanes of `mask`, returns this
/// lane's result.
#[track_caller]
pub(crate) fn meet(op: WarpOp, mask: u32, value: u64, arg: u32) -> u64 {
    meet_at(op, mask, value, arg, Location::caller())
}

/// [`meet`], for a collective at `location`.
pub(crate) fn meet_at(
    op: WarpOp,
    mask: u32,
    value: u64,
    arg: u32,
    location: &'static Location<'static>,
) -> u64 {
    let arrival = Arrival {
        meet: Meet::Warp(op),
        value,
        mask,
        arg,
        location,
    };
    if let Some(result) = wait(arrival) {
        return result;
    }
    // A thread alone in its block: a warp of one lane, whose gathered posts it reads before it
    // meets again.
    let mut threads = [State::Wait(arrival)];
    let coords = [tls::thread()];
    let done =
        MAILBOX.with(|m| complete(&mut threads, &coords, &mut Unobserved, &mut m.borrow_mut()));
    if let Err(p) = done {
        let state = tls::block();
        // Checked mode gives the block's shared memory a shadow.
        diverged(&state, state.shared_shadow.is_some(), &coords, p);
    }
    match threads[0] {
        State::Run(result) => result,
        _ => unreachable!("a completed collective resumes its lanes"),
    }
}

/// A collective that cannot complete: thread `thread` waits at `arrival`, and `what` says why
/// the others do not come.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) thread: usize,
    pub(crate) arrival: Arrival,
    pub(crate) what: String,
}

/// Completes every collective that the block's threads (`threads`, by linear index, with their
/// coordinates in `coords`) have all stopped at: each lane of it becomes `State::Run` with its
/// result, as does each lane that asked `activemask()`, and a completed `syncwarp` is told to
/// `observer` (checked mode orders its lanes' accesses by it). Threads waiting at
/// barriers are left as they are. Returns whether any thread was resumed.
///
/// A collective is reported when it can never complete: its mask leaves out the caller, or a lane
/// of its mask waits at a barrier (which the lanes waiting here keep closed). Lanes of the mask
/// that do not exist or have returned take no part. One whose lanes wait at another collective can complete
/// after that one does; it is reported only when no collective of the block can complete.
pub(crate) fn complete(
    threads: &mut [State],
    coords: &[Dim3],
    observer: &mut impl Observer,
    mailbox: &mut Vec<u64>,
) -> Result<bool, Problem> {
    let n = threads.len();
    let size = WARP_SIZE as usize;
    let mut resumed = false;
    let mut stuck = None;
    for first in (0..n).step_by(size) {
        let warp = &mut threads[first..n.min(first + size)];
        let live = warp
            .iter()
            .enumerate()
            .filter(|(_, s)| !matches!(s, State::Done))
            .fold(0u32, |m, (l, _)| m | 1 << l);
        // `activemask()`: the lanes that asked at the same place. A GPU answers with the lanes
        // that run the call together, so those of a branch give the branch's lanes (and every
        // live lane, outside branches).
        let asking = |at: &Location| {
            warp.iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, State::Wait(b) if b.meet == Meet::ActiveMask && *b.location == *at))
                .fold(0u32, |m, (l, _)| m | 1 << l)
        };
        let masks: Vec<(usize, u32)> = warp
            .iter()
            .enumerate()
            .filter_map(|(l, s)| match s {
                State::Wait(a) if a.meet == Meet::ActiveMask => Some((l, asking(a.location))),
                _ => None,
            })
            .collect();
        for (l, mask) in masks {
            warp[l] = State::Run(mask as u64);
            resumed = true;
        }
        'lanes: for lane in 0..warp.len() {
            let State::Wait(a) = warp[lane] else {
                continue;
            };
            let Meet::Warp(op) = a.meet else {
                continue;
            };
            let problem = |what: String| Problem {
                thread: first + lane,
                arrival: a,
                what,
            };
            if a.mask & 1 << lane == 0 {
                return Err(problem(leaves_out(a.mask, lane)));
            }
            // The lanes that take part: those of the mask that exist and have not returned.
            let mask = a.mask & live;
            let mut lanes = [(0u64, 0u32); 32];
            for (l, slot) in lanes.iter_mut().enumerate().take(warp.len()) {
                if mask & 1 << l == 0 {
                    continue;
                }
                let other = coords[first + l];
                match warp[l] {
                    State::Wait(b) if b.meet == a.meet && b.mask & live == mask => {
                        *slot = (b.value, b.arg)
                    }
                    State::Wait(b) => {
                        let what = format!("lane {l} (thread {other}) waits at {}", b.describe());
                        // Another collective may complete and let the lane come; a barrier
                        // stays closed while the lanes here wait.
                        if matches!(b.meet, Meet::Warp(_)) {
                            stuck.get_or_insert_with(|| problem(what));
                            continue 'lanes;
                        }
                        return Err(problem(what));
                    }
                    // Resumed by this call: it may come next round. (A lane that returned is
                    // not in `mask`.)
                    State::Run(_) | State::Done => continue 'lanes,
                }
            }
            let results = match op {
                WarpOp::Gather { .. } => {
                    gathered(first / size, n.div_ceil(size), mask, &lanes, mailbox)
                }
                _ => results(op, mask, &lanes),
            };
            for (l, s) in warp.iter_mut().enumerate() {
                if mask & 1 << l != 0 {
                    *s = State::Run(results[l]);
                }
            }
            if op == WarpOp::Sync {
                observer.syncwarp(first, warp.len(), mask);
            }
            resumed = true;
        }
    }
    match stuck {
        Some(p) if !resumed => Err(p),
        _ => Ok(resumed),
    }
}

/// The most 8-byte words a lane posts in a [`gather`].
const POST_WORDS: usize = 16;
/// A warp's area of a block's mailbox: which lanes posted, then a slot of [`POST_WORDS`] for
/// each lane.
const REGION: usize = 1 + 32 * POST_WORDS;

/// The warp's posts, for the collective `name`: waits for its 32 lanes and calls `read` with
/// each lane's `post` (`None` for a lane that takes no part: it does not exist, or returned).
/// One meeting, whatever the size of the posts: what a lane would otherwise gather by a shuffle
/// per word. Lanes meet only others that post the same type.
///
/// The meeting copies the posts into the block's mailbox, the warp's area of which the next
/// meeting of the warp overwrites: each lane has read it by then, as a lane reads it before it
/// stops again. Unlike `syncwarp` in checked mode, it orders no memory access: it stands for an
/// instruction of the warp's registers (`mma.sync`, `ldmatrix`).
#[track_caller]
pub(crate) fn gather<P: Copy + 'static, R>(
    name: &'static str,
    post: P,
    read: impl FnOnce(&[Option<&P>; 32]) -> R,
) -> R {
    const {
        assert!(size_of::<P>() <= 8 * POST_WORDS && align_of::<P>() <= 8);
    }
    let op = WarpOp::Gather {
        name,
        kind: core::any::TypeId::of::<P>(),
    };
    let mine = &post as *const P as u64;
    let area = meet_at(
        op,
        u32::MAX,
        mine,
        size_of::<P>() as u32,
        Location::caller(),
    );
    let area = area as *const u64;
    // SAFETY: the meeting returned the warp's area of the mailbox, which lives, unchanged,
    // until the warp's next meeting: its first word the lanes that posted, then each one's
    // post, a `P` (lanes meet only those that post the same type), in a slot aligned to 8.
    let posts = unsafe {
        let posted = *area as u32;
        core::array::from_fn(|l| {
            (posted & 1 << l != 0).then(|| &*(area.add(1 + l * POST_WORDS) as *const P))
        })
    };
    read(&posts)
}

/// Completes a [`gather`] of the lanes of `mask` of warp `warp`, whose values are the
/// addresses of their posts and arguments their sizes: copies the posts into the warp's area of
/// `mailbox` (made for all `warps` of the block), and gives every lane the area's address.
fn gathered(
    warp: usize,
    warps: usize,
    mask: u32,
    lanes: &[(u64, u32); 32],
    mailbox: &mut Vec<u64>,
) -> [u64; 32] {
    // Grown here, between rounds, where no lane is reading an area (see `gather`), and for
    // every warp at once, before any lane gets an address.
    if mailbox.len() < warps * REGION {
        mailbox.resize(warps * REGION, 0);
    }
    let area = &mut mailbox[warp * REGION..(warp + 1) * REGION];
    area[0] = mask as u64;
    for l in each_lane(mask) {
        let (post, bytes) = lanes[l];
        let slot = &mut area[1 + l * POST_WORDS..1 + (l + 1) * POST_WORDS];
        let bytes = (bytes as usize).min(8 * POST_WORDS);
        // SAFETY: the lane's post is a `P` of `bytes` bytes in the frame of its `gather`, which
        // waits at this meeting; the slot holds `8 * POST_WORDS` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(post as *const u8, slot.as_mut_ptr() as *mut u8, bytes)
        };
    }
    let address = area.as_ptr() as u64;
    std::array::from_fn(|l| if mask & 1 << l != 0 { address } else { 0 })
}

/// Stops the block with a collective that cannot complete.
#[cold]
pub(crate) fn diverged(state: &BlockState, checked: bool, coords: &[Dim3], p: Problem) -> ! {
    let finding = Finding::DivergentWarp {
        block: state.block,
        collective: p.arrival.describe(),
        waiting: coords[p.thread],
        problem: p.what,
    };
    fault::stop(checked, finding)
}

/// Why a collective whose `mask` leaves out the caller's `lane` cannot complete.
pub(crate) fn leaves_out(mask: u32, lane: usize) -> String {
    format!("its mask {mask:#010x} leaves out its own lane {lane}")
}

/// Each lane's result of collective `op` over the lanes of `mask`, from each lane's value and
/// argument (lanes outside `mask` are ignored and get 0).
pub(crate) fn results(op: WarpOp, mask: u32, lanes: &[(u64, u32); 32]) -> [u64; 32] {
    let mut out = [0u64; 32];
    let member = |l: usize| mask & 1 << l != 0;
    let votes = || {
        (0..32)
            .filter(|&l| member(l) && lanes[l].0 != 0)
            .fold(0u32, |m, l| m | 1 << l)
    };
    // Each op in a loop of its own, which the optimiser can vectorize.
    match op {
        WarpOp::Shfl(mode) => {
            for (l, r) in out.iter_mut().enumerate() {
                let (value, arg) = lanes[l];
                let source = match mode {
                    ShflMode::Idx => Some(arg % WARP_SIZE),
                    ShflMode::Up => (l as u32).checked_sub(arg),
                    ShflMode::Down => (l as u32).checked_add(arg).filter(|&s| s < WARP_SIZE),
                    ShflMode::Xor => Some(l as u32 ^ arg).filter(|&s| s < WARP_SIZE),
                };
                // A source outside the mask is undefined on the GPU: the lane keeps its own.
                *r = match source {
                    Some(s) if member(s as usize) => lanes[s as usize].0,
                    _ => value,
                };
            }
        }
        WarpOp::Ballot | WarpOp::All | WarpOp::Any | WarpOp::Eq => {
            let votes = votes();
            let result = match op {
                WarpOp::Ballot => votes as u64,
                WarpOp::All => (votes == mask) as u64,
                WarpOp::Any => (votes != 0) as u64,
                _ => (votes == 0 || votes == mask) as u64,
            };
            out = [result; 32];
        }
        WarpOp::MatchAny => {
            for (l, r) in out.iter_mut().enumerate() {
                let value = lanes[l].0;
                *r = (0..32)
                    .filter(|&k| member(k) && lanes[k].0 == value)
                    .fold(0u32, |m, k| m | 1 << k) as u64;
            }
        }
        WarpOp::MatchAll => {
            let first = lanes[mask.trailing_zeros() as usize % 32].0;
            let all = (0..32).all(|k| !member(k) || lanes[k].0 == first);
            out = [if all { mask as u64 } else { 0 }; 32];
        }
        // Only a coroutine's `gather` meets so, and `complete` answers it (`gathered`).
        WarpOp::Sync | WarpOp::Gather { .. } => {}
    }
    for (l, r) in out.iter_mut().enumerate() {
        if !member(l) {
            *r = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each taking part lane's post lands in its slot of the warp's area, the area says who
    /// posted, and every such lane gets the area's address; other warps' areas stay as they
    /// were.
    #[test]
    fn a_gathering_copies_the_posts_into_the_warps_area() {
        let posts: Vec<[u32; 3]> = (0..3).map(|k| [k, 10 + k, 20 + k]).collect();
        let mut lanes = [(0u64, 0u32); 32];
        for (l, p) in [2, 5, 9].iter().zip(&posts) {
            lanes[*l] = (p as *const [u32; 3] as u64, 12);
        }
        let mask = 1 << 2 | 1 << 5 | 1 << 9;
        let mut mailbox = Vec::new();
        let got = gathered(1, 3, mask, &lanes, &mut mailbox);
        assert_eq!(mailbox.len(), 3 * REGION);
        let area = &mailbox[REGION..2 * REGION];
        assert_eq!(
            (got[2], got[9], got[0]),
            (area.as_ptr() as u64, area.as_ptr() as u64, 0)
        );
        assert_eq!(area[0], mask as u64);
        for (k, l) in [2, 5, 9].into_iter().enumerate() {
            let slot = &area[1 + l * POST_WORDS..];
            // SAFETY: the slot holds the 12 bytes of a `[u32; 3]`, aligned to 8.
            let post = unsafe { *(slot.as_ptr() as *const [u32; 3]) };
            assert_eq!(post, posts[k]);
        }
        assert!(mailbox[..REGION]
            .iter()
            .chain(&mailbox[2 * REGION..])
            .all(|&w| w == 0));
    }

    fn lanes(f: impl Fn(usize) -> (u64, u32)) -> [(u64, u32); 32] {
        std::array::from_fn(f)
    }

    #[test]
    fn shuffles_read_their_source_or_keep_their_own() {
        let idx = results(
            WarpOp::Shfl(ShflMode::Idx),
            u32::MAX,
            &lanes(|l| (l as u64, 35)),
        );
        assert!(idx.iter().all(|&r| r == 3), "src_lane wraps at 32");
        let up = results(
            WarpOp::Shfl(ShflMode::Up),
            u32::MAX,
            &lanes(|l| (l as u64, 2)),
        );
        assert_eq!((up[0], up[1], up[2], up[31]), (0, 1, 0, 29));
        let down = results(
            WarpOp::Shfl(ShflMode::Down),
            u32::MAX,
            &lanes(|l| (l as u64, 4)),
        );
        assert_eq!((down[0], down[27], down[28], down[31]), (4, 31, 28, 31));
        let xor = results(
            WarpOp::Shfl(ShflMode::Xor),
            u32::MAX,
            &lanes(|l| (l as u64, 1)),
        );
        assert_eq!((xor[0], xor[1], xor[30], xor[31]), (1, 0, 31, 30));
        let far = results(
            WarpOp::Shfl(ShflMode::Xor),
            u32::MAX,
            &lanes(|l| (l as u64, 32)),
        );
        assert_eq!(
            far[5], 5,
            "a source past lane 31 keeps the lane's own value"
        );
        // Half a warp: lane 15 reading lane 16, outside the mask, keeps its own.
        let half = results(
            WarpOp::Shfl(ShflMode::Down),
            0xffff,
            &lanes(|l| (l as u64, 1)),
        );
        assert_eq!((half[14], half[15], half[16]), (15, 15, 0));
    }

    #[test]
    fn votes_and_matches_cover_the_mask_only() {
        let mask = 0x0000_00ff;
        let odd = lanes(|l| ((l % 2) as u64, 0));
        assert_eq!(results(WarpOp::Ballot, mask, &odd)[0], 0xaa);
        assert_eq!(results(WarpOp::Any, mask, &odd)[3], 1);
        assert_eq!(results(WarpOp::All, mask, &odd)[3], 0);
        assert_eq!(results(WarpOp::Eq, mask, &odd)[3], 0);
        let ones = lanes(|l| ((l < 8) as u64, 0));
        assert_eq!(results(WarpOp::All, mask, &ones)[7], 1);
        assert_eq!(results(WarpOp::Eq, mask, &lanes(|_| (0, 0)))[7], 1);
        let thirds = lanes(|l| ((l % 3) as u64, 0));
        let any = results(WarpOp::MatchAny, mask, &thirds);
        assert_eq!((any[0], any[1], any[8]), (0b0100_1001, 0b1001_0010, 0));
        assert_eq!(results(WarpOp::MatchAll, mask, &thirds)[0], 0);
        assert_eq!(results(WarpOp::MatchAll, mask, &ones)[0], mask as u64);
    }

    #[test]
    fn each_lane_of_a_mask_lowest_first() {
        assert_eq!(each_lane(0b1010_0001).collect::<Vec<_>>(), [0, 5, 7]);
        assert_eq!(each_lane(1 << 31).collect::<Vec<_>>(), [31]);
        assert_eq!(each_lane(u32::MAX).count(), 32);
        assert_eq!(each_lane(0).next(), None);
    }

    #[test]
    fn existing_lanes_of_a_partial_warp() {
        assert_eq!(existing(0, 48), u32::MAX);
        assert_eq!(existing(1, 48), 0xffff);
        assert_eq!(existing(2, 48), 0);
        assert_eq!(existing(0, 1), 1);
    }
}
