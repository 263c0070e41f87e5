//! The warpgroup's operations on the CPU backend: each checked as the GPU needs it called
//! (whole warpgroups; each warp's 32 lanes together, at one place), and the product computed at
//! the call, each thread its own elements from the shared tiles.

use super::*;
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
        panic!(
            "{name} at {here}: the block has {threads} threads, not whole warpgroups of 128: \
             give the block a multiple of 128 threads"
        );
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
        panic!("{why}");
    }
}

/// The thread's elements of `d = A · B (+ d)`, the `K` products of each added in order.
#[track_caller]
pub(super) fn mma<S: WgShape, T: Half, const M: usize, const K: usize>(
    d: &mut WgAccumulator<S>,
    (sa, m): (&impl Source<T>, usize),
    (sb, n): (&impl Source<T>, usize),
    accumulate: bool,
) {
    meet(Op::Mma, [m, n, M, K]);
    let t = crate::ctx::block_dim().flatten(crate::ctx::thread_idx()) as usize;
    for (e, x) in d.x.as_mut().iter_mut().enumerate() {
        let [r, c] = WgAccumulator::<S>::place(t, e);
        let mut sum = if accumulate { *x } else { 0.0 };
        for k in 0..K {
            let a = src_at(sa, a_place::<M>(m + r, k));
            let b = src_at(sb, b_place::<K>(k, n + c));
            sum += a.widen() * b.widen();
        }
        *x = sum;
    }
}
