//! Threads one after another. A row at a time ([`row`]) is the one copy of a kernel's fast body
//! that every run but the fast loops shares: a grid-level kernel's row ends, a launch whose
//! arrays differ in shape, a kernel that asks for its coordinates from outside its body, the
//! replay of a fault, so that the body is compiled into one more loop, not one per path.

use super::launch::context::Ctx;
use super::launch::shapes::LaunchViews;
use super::launch::{ctx_of, tls, BlockState};
use crate::dim::Dim3;
use std::ops::Range;

/// What a row records of each thread as it runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Track {
    /// Nothing: the fast backend, whose faults are replayed tracked.
    No,
    /// The thread's coordinates (for code outside the body and for fault reports).
    Threads,
}

/// Runs the threads `xs` along x of the row whose thread x 0 is `ctx`: `body(ctx, views,
/// false)`, each recorded as `track` says.
#[inline(never)]
pub(crate) fn row<V: LaunchViews, F: Fn(Ctx, V, bool)>(
    mut ctx: Ctx,
    xs: Range<u32>,
    views: V,
    body: F,
    track: Track,
) {
    for x in xs {
        ctx.thread.x = x;
        if track == Track::Threads {
            tls::set_thread(ctx.thread);
        }
        body(ctx, views, false);
    }
}

/// Runs every thread of the block `state`, row by row (see [`row`]).
#[inline(always)]
pub(crate) fn block<V: LaunchViews, F: Fn(Ctx, V, bool) + Copy>(
    state: &BlockState,
    views: V,
    body: F,
    track: Track,
) {
    let d = state.block_dim;
    for z in 0..d.z {
        for y in 0..d.y {
            row(
                ctx_of(state, Dim3::new(0, y, z)),
                0..d.x,
                views,
                body,
                track,
            );
        }
    }
}
