//! Grid-stride loops on the CPU backend: a 1-D grid-level kernel whose body is
//! `let mut i = grid(1); while i < n { ..; i += gridsize(1); }` runs its loop's body once per
//! index below `n`, in index order, the indices split over the cores; a 2-D nest of such loops
//! (`for y in (y0..h).step_by(sy) { for x in (x0..w).step_by(sx) { .. } }`) runs its body once
//! per pair of indices, row after row, the rows split over the cores.
//!
//! On a GPU the grid's threads walk the array together, a grid's stride apart, each step of
//! the grid one contiguous sweep. Thread by thread, as the CPU runs them, each would walk the
//! whole array alone (10⁷ elements a stride of 65 536 apart: every access a cache miss).
//! The `#[kernel]` macro recognises the loop (see its `split::stride`) and gives its body of one
//! index; the threads between them visit each index once, so running the indices in order does
//! what they do. A fault is replayed index by index with the thread that would have run it,
//! `i % gridsize(1)` (along each axis of a nest), as the current one, and named so.

use super::exec::{run_tasks, untracked_then_replay, wide_variants};
use super::fault::{self, KernelFault};
use super::launch::context::Ctx;
use super::launch::shapes::{Common, LaunchViews};
use super::launch::{block_state, ctx_of, tls, BlockState, LaunchSpec};
use crate::dim::Dim3;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Indices per task: enough for the per-task costs to vanish.
const TASK_INDICES: u64 = 1 << 16;

/// Runs `index(ctx, views, i)` for every `i` below `bound(ctx, views)` (the bound evaluated
/// once, by thread 0), as the threads of a 1-D launch of `spec` would between them.
///
/// Where the launch's 1-D arrays share one length, the indices below it run in a loop of their
/// own with the views reshaped to it (see `shapes`). The body of one index keeps the loop's own
/// test (`i < n`, which holds): where `n` is an array's length, as a rule, that test is then every
/// array's index check, which the optimiser drops, and the loop vectorizes as a hand-written
/// one (saxpy on 10⁷ f32: 1.70 ms, the same one element per thread, 1.04× rayon).
pub(crate) fn run<V, I, B>(
    spec: &LaunchSpec,
    views: V,
    index: I,
    bound: B,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    I: Fn(Ctx, V, usize) + Copy + Sync,
    B: Fn(Ctx, V) -> usize,
{
    let common = views.shapes(true).common();
    let n = as_thread_zero(spec, |base| bound(base, views))?;
    run_tasks(spec, n as u64, 1, TASK_INDICES, &|range, shared, _| {
        let base = ctx_of(&block_state(spec, 0, shared), Dim3::ZERO);
        untracked_then_replay(
            &mut || {
                let (lo, hi) = (range.start as usize, range.end as usize);
                let split = match common {
                    Some(common) => {
                        let [length] = common.of::<1>();
                        let end = hi.min(length).max(lo);
                        run_indices::<V, I>(base, lo..end, views, common, index);
                        end
                    }
                    None => lo,
                };
                for i in split..hi {
                    index(base, views, i);
                }
            },
            &mut || replay(spec, range.clone(), views, index),
        )
    })
}

/// `f` of the context of the launch's first thread, as that thread: a bound, which every
/// thread computes alike; its fault, named so.
fn as_thread_zero<T>(spec: &LaunchSpec, f: impl FnOnce(Ctx) -> T) -> Result<T, KernelFault> {
    let state = block_state(spec, 0, std::ptr::null_mut());
    tls::BLOCK.with(|c| c.set(state));
    tls::set_thread(Dim3::ZERO);
    let value = catch_unwind(AssertUnwindSafe(|| f(ctx_of(&state, Dim3::ZERO))));
    tls::set_thread(tls::UNKNOWN_THREAD);
    tls::BLOCK.with(|c| c.set(BlockState::NONE));
    value.map_err(fault::describe)
}

/// The indices `range` again, each with the thread that would have run it as the current one:
/// a fault then names it.
fn replay<V: Copy, I: Fn(Ctx, V, usize)>(spec: &LaunchSpec, range: Range<u64>, views: V, index: I) {
    for i in range {
        index(become_thread_of(spec, i as usize, 0), views, i as usize);
    }
}

/// Makes the thread that visits the grid indices `(x, y)` in a grid-stride loop the current
/// one; its context.
fn become_thread_of(spec: &LaunchSpec, x: usize, y: usize) -> Ctx {
    let (grid, width) = (spec.grid, spec.block);
    let along = |i: usize, blocks: u32, width: u32| {
        let t = i % (blocks as usize * width as usize).max(1);
        let width = width.max(1) as usize;
        ((t / width) as u32, (t % width) as u32)
    };
    let ((bx, tx), (by, ty)) = (along(x, grid.x, width.x), along(y, grid.y, width.y));
    let state = BlockState {
        block: Dim3::new(bx, by, 0),
        ..block_state(spec, 0, std::ptr::null_mut())
    };
    let thread = Dim3::new(tx, ty, 0);
    tls::BLOCK.with(|c| c.set(state));
    tls::set_thread(thread);
    ctx_of(&state, thread)
}

wide_variants!(
    /// The indices `range`, below the arrays' common length, in a loop of their own.
    run_indices [V: LaunchViews, I: Fn(Ctx, V, usize) + Copy] [V, I]
    (ctx: Ctx, range: Range<usize>, views: V, common: Common, index: I) => index_loop
);

/// The loop of [`run_indices`]: the views reshaped to `common`, the range below its 1-D
/// length, which is what the views' index checks compare with.
#[inline(always)]
fn index_loop<V: LaunchViews, I: Fn(Ctx, V, usize) + Copy>(
    ctx: Ctx,
    range: Range<usize>,
    views: V,
    common: Common,
    index: I,
) {
    let [length] = common.of::<1>();
    for i in range.start..range.end.min(length) {
        // SAFETY: `common` holds the views' shapes (`run` found them).
        index(ctx, unsafe { views.fast::<true>(&common) }, i);
    }
}

/// A 2-D grid-stride nest: the body `(ctx, views, outer, inner)` of one pair of indices, the
/// outer loop's bound `(ctx, views) -> n` and the inner's for an outer index
/// `(ctx, views, outer) -> m`; whether the outer loop walks the grid's y (else its x).
pub(crate) struct Nest<I, B, C> {
    pub index: I,
    pub bound: B,
    pub inner: C,
    pub outer_y: bool,
}

/// Runs `nest.index(ctx, views, o, i)` for every `o` below `nest.bound` and `i` below
/// `nest.inner` of `o`, as the threads of a 2-D launch of `spec` would between them: rows of
/// the outer index split over the cores, each row's inner indices in order.
pub(crate) fn run_nest<V, I, B, C>(
    spec: &LaunchSpec,
    views: V,
    nest: Nest<I, B, C>,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    I: Fn(Ctx, V, usize, usize) + Copy + Sync,
    B: Fn(Ctx, V) -> usize,
    C: Fn(Ctx, V, usize) -> usize + Copy + Sync,
{
    let Nest { index, inner, .. } = nest;
    let common = views.shapes(true).common();
    let n = as_thread_zero(spec, |base| (nest.bound)(base, views))?;
    let width = match n {
        0 => 0,
        _ => as_thread_zero(spec, |base| inner(base, views, 0))?,
    };
    run_tasks(
        spec,
        n as u64,
        width.max(1) as u64,
        TASK_INDICES,
        &|range, shared, _| {
            let base = ctx_of(&block_state(spec, 0, shared), Dim3::ZERO);
            let rows = range.start as usize..range.end as usize;
            untracked_then_replay(
                &mut || match common {
                    Some(common) => {
                        run_rows::<V, I, C>(base, rows.clone(), views, common, index, inner)
                    }
                    None => {
                        for o in rows.clone() {
                            for i in 0..row_length(inner, base, views, o) {
                                index(base, views, o, i);
                            }
                        }
                    }
                },
                &mut || {
                    for o in rows.clone() {
                        for i in 0..row_length(inner, base, views, o) {
                            let (x, y) = if nest.outer_y { (i, o) } else { (o, i) };
                            index(become_thread_of(spec, x, y), views, o, i);
                        }
                    }
                },
            )
        },
    )
}

wide_variants!(
    /// The rows `rows` of a nest, in a loop of their own.
    run_rows [V: LaunchViews, I: Fn(Ctx, V, usize, usize) + Copy, C: Fn(Ctx, V, usize) -> usize + Copy] [V, I, C]
    (ctx: Ctx, rows: Range<usize>, views: V, common: Common, index: I, inner: C) => rows_loop
);

/// The loop of [`run_rows`]: the views reshaped to `common`, each row's inner indices below its
/// bound, which the body's own test compares with.
#[inline(always)]
fn rows_loop<V, I, C>(ctx: Ctx, rows: Range<usize>, views: V, common: Common, index: I, inner: C)
where
    V: LaunchViews,
    I: Fn(Ctx, V, usize, usize) + Copy,
    C: Fn(Ctx, V, usize) -> usize + Copy,
{
    // SAFETY: `common` holds the views' shapes (`run_nest` found them).
    let fast = unsafe { views.fast::<true>(&common) };
    for o in rows {
        for i in 0..row_length(inner, ctx, fast, o) {
            index(ctx, fast, o, i);
        }
    }
}

/// The inner bound of row `o` of a nest, with `o` hidden from the optimiser.
///
/// A bound made of the row (a triangle's `(y + 1).min(w)`) ties the inner loop's trip count to
/// the outer loop's induction, and LLVM's loop analysis (scalar evolution, as loop-load
/// elimination asks it whether a row's `+=` overlaps another's) then recursed without end: a
/// release build of such a kernel did not finish. Seen apart from the outer loop, `o` keeps
/// what the bound says of the arrays (`i < w` still drops an index check of `w`) and costs one
/// store and load per row.
#[inline(always)]
fn row_length<V, C>(inner: C, ctx: Ctx, views: V, o: usize) -> usize
where
    C: Fn(Ctx, V, usize) -> usize,
{
    inner(ctx, views, std::hint::black_box(o))
}
