//! Grid-stride loops on the CPU backend: a 1-D grid-level kernel whose body is
//! `let mut i = grid(1); while i < n { ..; i += gridsize(1); }` runs its loop's body once per
//! index below `n`, in index order, the indices split over the cores.
//!
//! On a GPU the grid's threads walk the array together, a grid's stride apart, each step of
//! the grid one contiguous sweep. Thread by thread, as the CPU runs them, each would walk the
//! whole array alone (10⁷ elements a stride of 65 536 apart: every access a cache miss).
//! The `#[kernel]` macro recognises the loop (see its `split::stride`) and gives its body of one
//! index; the threads between them visit each index once, so running the indices in order does
//! what they do. A fault is replayed index by index with the thread that would have run it,
//! `i % gridsize(1)`, as the current one, and named so.

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
    let state = block_state(spec, 0, std::ptr::null_mut());
    let base = ctx_of(&state, Dim3::ZERO);
    tls::BLOCK.with(|c| c.set(state));
    tls::set_thread(Dim3::ZERO);
    let n = catch_unwind(AssertUnwindSafe(|| bound(base, views)));
    tls::set_thread(tls::UNKNOWN_THREAD);
    tls::BLOCK.with(|c| c.set(BlockState::NONE));
    let n = n.map_err(fault::describe)?;
    let threads = spec.grid.x as u64 * spec.block.x as u64;
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
            &mut || replay(spec, range.clone(), threads, views, index),
        )
    })
}

/// The indices `range` again, each with the thread that would have run it as the current one:
/// a fault then names it.
fn replay<V: Copy, I: Fn(Ctx, V, usize)>(
    spec: &LaunchSpec,
    range: Range<u64>,
    threads: u64,
    views: V,
    index: I,
) {
    let width = spec.block.x.max(1) as u64;
    for i in range {
        let t = i % threads.max(1);
        let state = BlockState {
            block: Dim3::new((t / width) as u32, 0, 0),
            ..block_state(spec, 0, std::ptr::null_mut())
        };
        let thread = Dim3::new((t % width) as u32, 0, 0);
        tls::BLOCK.with(|c| c.set(state));
        tls::set_thread(thread);
        index(ctx_of(&state, thread), views, i as usize);
    }
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
