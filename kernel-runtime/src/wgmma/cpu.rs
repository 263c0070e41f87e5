//! The warpgroup's operations on the CPU backend: each checked as the GPU needs it called
//! (whole warpgroups; each warp's 32 lanes together, at one place), and the product computed at
//! the call, each thread its own elements from the shared tiles, read as the thread's reads.
//!
//! Checked mode also keeps the block's warpgroup record (`check::warpgroup`): the four warps of
//! a warpgroup call the same operations in the same order, and no thread writes an operand of a
//! product in flight, which a GPU's tensor cores may still be reading.

use super::*;
use crate::base::WARP_SIZE;
use crate::cpu::check::warpgroup::Step;
use crate::cpu::check::{who, with_warpgroups};
use crate::cpu::fault::raise_with_coordinates;
use crate::cpu::sched::warp::gather;
use std::panic::Location;

/// What a lane posts at a warpgroup operation: which, where, and the tiles it names.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Post {
    op: Op,
    at: (u32, u32),
    tiles: [usize; 4],
}

#[track_caller]
pub(super) fn sync_op(op: Op) {
    meet(op, [0; 4]);
}

/// The warpgroup's meeting at `op`: every thread of the block's warpgroups takes part (the
/// block has whole warpgroups), and the lanes of each warp call at one place with the same
/// `tiles`; else the kernel stops with an error at the call.
#[track_caller]
fn meet(op: Op, tiles: [usize; 4]) {
    let here = Location::caller();
    let name = match op {
        Op::Fence => "wgmma::fence",
        Op::Commit => "wgmma::commit_group",
        Op::Wait(_) => "wgmma::wait_group",
        Op::Mma => "wgmma::mma_async",
    };
    let threads = crate::ctx::block_dim().volume() as usize;
    if !threads.is_multiple_of(WARPGROUP) {
        raise_with_coordinates(format!(
            "{name} at {here}: the block has {threads} threads, not whole warpgroups of 128: \
             give the block a multiple of 128 threads"
        ));
    }
    let post = Post {
        op,
        at: (here.line(), here.column()),
        tiles,
    };
    let lane = crate::warp::lane_id() as usize;
    let met = gather(name, post, |posts| {
        if let Some(missing) = posts.iter().position(Option::is_none) {
            return Err(format!(
                "{name} at {here} needs every thread of the warpgroup, but lane {missing} of \
                 the warp does not take part (it returned): call it from all 128 threads"
            ));
        }
        match posts.iter().flatten().position(|p| **p != post) {
            None => Ok(()),
            Some(other) => Err(format!(
                "{name} is called by lane {lane} at line {} and by lane {other} at line {} \
                 or with other tiles, in {}: the warpgroup calls it together, at one place, \
                 with the same tiles",
                post.at.0,
                posts[other].map_or(0, |p| p.at.0),
                here.file()
            )),
        }
    });
    if let Err(why) = met {
        raise_with_coordinates(why);
    }
    if lane == 0 {
        in_warpgroup(
            op,
            Step {
                name,
                at: here,
                tiles,
            },
        );
    }
}

/// Checked mode's record of the warp's `op`: compared with the other warps' of its warpgroup,
/// and its groups counted.
fn in_warpgroup(op: Op, step: Step) {
    let warp = warp();
    let seen = with_warpgroups(|w| {
        let other = w.step(warp, step);
        match op {
            Op::Commit => w.commit(warp),
            Op::Wait(latest) => w.wait(warp, latest, who().interval),
            Op::Fence => w.fence(warp),
            Op::Mma => {}
        }
        other
    });
    if let Some(Err((first, by))) = seen {
        raise_with_coordinates(format!(
            "{} at {} in warp {warp} of the block, where warp {by} of its warpgroup called {} \
             at {}: the four warps of a warpgroup call each operation together, at one place, \
             with the same tiles",
            step.name, step.at, first.name, first.at
        ));
    }
}

/// Checked mode's test of a read of an accumulator whose last product is of `group`: the warp
/// must have waited for it; the accumulator is then its own again.
#[track_caller]
pub(super) fn settled(group: &mut Option<u32>) {
    let Some(g) = *group else { return };
    let warp = warp();
    if with_warpgroups(|w| w.waited_for(warp, g)) == Some(false) {
        raise_with_coordinates(format!(
            "WgAccumulator::for_each at {} in warp {warp}: the accumulator's last product, of \
             the warp's group {g}, may still be writing it (on a GPU its registers are the \
             tensor cores' until then): call wgmma::wait_group for that group first",
            Location::caller()
        ));
    }
    *group = None;
}

/// Checked mode: the warp's count of fences, for an accumulator its threads write now.
pub(super) fn fences() -> Option<u32> {
    with_warpgroups(|w| w.fences_of(warp()))
}

/// Checked mode's test of a product into an accumulator that the threads wrote when the warp
/// had passed `written` fences: a fence must lie between, or the tensor cores may read the
/// registers before the writes.
#[track_caller]
fn fenced(written: Option<u32>) {
    let Some(before) = written else { return };
    if fences() == Some(before) {
        raise_with_coordinates(format!(
            "wgmma::mma_async at {} in warp {}: the accumulator was written (WgAccumulator::new \
             or for_each) since the warp's last wgmma::fence: call fence() between the writes \
             and the product",
            Location::caller(),
            warp()
        ));
    }
}

/// The running thread's warp in its block.
fn warp() -> u32 {
    crate::ctx::block_dim().flatten(crate::ctx::thread_idx()) / WARP_SIZE
}

/// The thread's elements of `d = A · B (+ d)`, the `K` products of each added in order.
#[track_caller]
pub(super) fn mma<S: WgShape, T: WgElement, const M: usize, const K: usize>(
    d: &mut WgAccumulator<S>,
    (sa, m): (&impl Source<T>, usize),
    (sb, n, width): (&impl Source<T>, usize, usize),
    accumulate: bool,
) {
    meet(Op::Mma, [m, n, M, K]);
    fenced(d.written.take());
    d.group = with_warpgroups(|w| w.open_of(warp()));
    let t = crate::ctx::block_dim().flatten(crate::ctx::thread_idx()) as usize;
    let b = |k, n| b_at::<T>(k, n, K, width);
    if crate::cpu::launch::tls::block().shared_shadow.is_some() {
        if t.is_multiple_of(WARP_SIZE as usize) {
            in_flight::<S, T, M, K>((sa, m), (sb, n, width));
        }
        reads::<S, T, M, K>(t, (sa, m), (sb, n, width));
    }
    for (e, x) in d.x.as_mut().iter_mut().enumerate() {
        let [r, c] = WgAccumulator::<S>::place(t, e);
        let mut sum = if accumulate { *x } else { 0.0 };
        for k in 0..K {
            let a = src_at(sa, a_place::<T, M>(m + r, k));
            let b = src_at(sb, b(k, n + c));
            sum += a.value() * b.value();
        }
        *x = sum;
    }
}

/// Checked mode's record of what thread `t`'s elements of the product read, each element of
/// the operands once: its two rows of `A` and its `S::N / 4` columns of `B`.
#[track_caller]
fn reads<S: WgShape, T: WgElement, const M: usize, const K: usize>(
    t: usize,
    (sa, m): (&impl Source<T>, usize),
    (sb, n, width): (&impl Source<T>, usize, usize),
) {
    // Loops, not closures: each read's line is the caller's.
    let place = |e| WgAccumulator::<S>::place(t, e);
    for r in [place(0)[0], place(2)[0]] {
        for k in 0..K {
            sa.read(a_place::<T, M>(m + r, k));
        }
    }
    for e in (0..S::N / 2).step_by(4) {
        for c in [place(e)[1], place(e + 1)[1]] {
            for k in 0..K {
                sb.read(b_at::<T>(k, n + c, K, width));
            }
        }
    }
}

/// Checked mode's record of the warp's product of the 64 × `K` tile of `A` from row `m` of `sa`
/// and the `K` × `S::N` tile of `B` from column `n` of `sb`: the shared memory it reads, a run
/// of 16-byte rows from each strip of `A`, and of `B` the strips it crosses (N-major) or a run
/// of each (K-major), in flight until the warp waits for it.
#[track_caller]
fn in_flight<S: WgShape, T: WgElement, const M: usize, const K: usize>(
    (sa, m): (&impl Source<T>, usize),
    (sb, n, width): (&impl Source<T>, usize, usize),
) {
    let offset = |first: *const T| crate::pipeline::shared_offset(first as *const u8);
    let (a0, b0) = (offset(sa.first()), offset(sb.first()));
    let run = |base: usize, row: usize, rows: usize| (base + 16 * row, base + 16 * (row + rows));
    let strips = K / T::ROW;
    let a = (0..strips).map(move |s| run(a0, a_place::<T, M>(m, s * T::ROW)[0], 64));
    let b: Vec<_> = match T::KIND.b_n_major() {
        true => vec![run(b0, b_at::<T>(0, n, K, width)[0], S::N / 8 * K)],
        false => (0..strips)
            .map(|s| run(b0, b_at::<T>(s * T::ROW, n, K, width)[0], S::N))
            .collect(),
    };
    let at = Location::caller();
    with_warpgroups(|w| w.start(warp(), who().interval, a.chain(b), at));
}

/// `src[at]`, an element in bounds.
#[inline(always)]
fn src_at<T: Copy>(src: &impl Source<T>, [i, k]: [usize; 2]) -> T {
    let cols = src.extent()[1];
    // SAFETY: the caller keeps `[i, k]` in `src`'s extent, whose elements lie from `first`.
    unsafe { *src.first().add(i * cols + k) }
}
