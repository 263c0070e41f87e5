//! Grid-level kernels on the CPU backend: a launch run as rows of threads along x.
//!
//! A kernel whose threads only grid-level indices tell apart (`grid(n)`, `gridsize(n)`: see
//! [`LaunchSpec::grid_level`]) cannot tell which block runs a thread, so each row of the grid
//! (one global y and z) runs as one loop along x, cut into chunks of whole blocks where rows
//! are long, rows and chunks spread over the cores. A 2-D stencil's thread loop then spans the
//! image's width, not a block's 16 threads.
//!
//! Where the `#[kernel]` macro found the test on `grid(n).0` that guards the kernel's work
//! (`if 1 <= j && j + 1 < m { .. }`), it also gives the [`Span`] of a row in which that test
//! holds. The threads inside it run the body without the test, in a loop the optimiser can
//! vectorize (a guarded store of a byte cannot be, without AVX-512's masks); those outside it,
//! at the row's ends, run the body as written.

use super::exec::{run_tasks, untracked_then_replay, wide_variants, Task};
use super::fault::KernelFault;
use super::launch::context::Ctx;
use super::launch::shapes::{Common, LaunchViews};
use super::launch::{block_state, ctx_of, tls, BlockState, LaunchSpec};
use super::serial::{self, Track};
use crate::dim::Dim3;
use std::ops::Range;

/// Threads per task (a run of rows or chunks): enough for the per-task costs to vanish.
const TASK_THREADS: u64 = 1 << 16;

/// The grid x-indices `lo..hi` of the threads of a row in which a kernel's guard holds: the
/// threads there run the kernel without it. The `#[kernel]` macro narrows a row's span by each
/// test of the guard in turn; a span only ever shrinks, so a test it cannot decide leaves the
/// thread to the body's own test.
///
/// ```
/// # use kernel_runtime::__rt::Span;
/// // `1 <= j && j + 1 < m` with m = 10, for a row of threads 0..16.
/// let row = Span { lo: 0, hi: 16 };
/// assert_eq!(row.ge(0, 1).lt(1, 10), Span { lo: 1, hi: 9 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first index of the span.
    pub lo: usize,
    /// One past the last index of the span.
    pub hi: usize,
}

impl Span {
    /// No index.
    pub const EMPTY: Span = Span { lo: 0, hi: 0 };

    /// Whether the span holds no index.
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.lo >= self.hi
    }

    /// The indices `j` of the span for which `j + c < e`.
    #[inline(always)]
    pub fn lt(self, c: usize, e: usize) -> Span {
        match e.checked_sub(c) {
            Some(h) => self.below(h),
            None => Span::EMPTY,
        }
    }

    /// The indices `j` of the span for which `j + c <= e`.
    #[inline(always)]
    pub fn le(self, c: usize, e: usize) -> Span {
        match e.checked_sub(c) {
            Some(h) => self.below(h.saturating_add(1)),
            None => Span::EMPTY,
        }
    }

    /// The indices `j` of the span for which `j + c > e`, and `j + c` does not overflow.
    #[inline(always)]
    pub fn gt(self, c: usize, e: usize) -> Span {
        match e.checked_sub(c).map(|l| l.checked_add(1)) {
            Some(Some(l)) => self.fits(c).from(l),
            Some(None) => Span::EMPTY,
            None => self.fits(c),
        }
    }

    /// The indices `j` of the span for which `j + c >= e`, and `j + c` does not overflow.
    #[inline(always)]
    pub fn ge(self, c: usize, e: usize) -> Span {
        self.fits(c).from(e.saturating_sub(c))
    }

    /// Whether an index of an array of `shape`, whose components are `first` at a span's first
    /// thread and `last` at its last and grow by one per thread or not at all (the
    /// `#[kernel]` macro's proofs), lies within the array for every thread of the span: each
    /// component grows without wrapping (`first <= last`) and ends within its extent.
    #[inline(always)]
    pub fn within<const R: usize>(shape: [usize; R], first: [usize; R], last: [usize; R]) -> bool {
        (0..R).all(|k| first[k] <= last[k] && last[k] < shape[k])
    }

    /// The indices of both spans.
    #[inline(always)]
    pub fn and(self, other: Span) -> Span {
        Span {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        }
    }

    #[inline(always)]
    fn below(self, hi: usize) -> Span {
        Span {
            lo: self.lo,
            hi: self.hi.min(hi),
        }
    }

    #[inline(always)]
    fn from(self, lo: usize) -> Span {
        Span {
            lo: self.lo.max(lo),
            hi: self.hi,
        }
    }

    /// The indices `j` for which `j + c` does not overflow (all but `usize::MAX` when `c` is 0).
    #[inline(always)]
    fn fits(self, c: usize) -> Span {
        self.below((usize::MAX - c).saturating_add(1))
    }
}

/// Runs a grid-level kernel (see [`LaunchSpec::grid_level`]) row by row. `body(ctx, views,
/// inside)` is one thread, `inside` telling it that its `grid(n).0` lies in the span that
/// `span(ctx, views, row)` gives of the `row` of its first thread `ctx`.
///
/// Where the arrays of each rank agree (see [`shapes`](super::shapes)), the threads of a
/// row's span below the 1-D arrays' length run first, in a loop with the views reshaped and the
/// 1-D arrays' length that of the loop's bound, where a test such as `if i < c.len()` is known
/// to hold and costs nothing. The rest (a row's ends, launches whose arrays differ, the replay
/// of a fault) run the views as they are, in one copy of the loop.
pub(crate) fn run_grid<V, F, S>(
    spec: &LaunchSpec,
    views: V,
    body: F,
    span: S,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(Ctx, V, bool) + Copy + Sync,
    S: Fn(Ctx, V, Span) -> Span + Sync,
{
    debug_assert!(spec.grid_level);
    let shapes = views.shapes(true);
    let common = shapes.common();
    let bound = shapes.length().unwrap_or(usize::MAX);
    let untraced = views.untraced();
    let rows = Rows::of(spec);
    rows.run_tasks(spec, &|segments, shared, _| {
        let base = ctx_of(&block_state(spec, 0, shared), Dim3::ZERO);
        untracked_then_replay(
            &mut || {
                for s in segments.clone() {
                    let (ctx, first, threads) = rows.segment(base, s);
                    let Some(common) = common else {
                        serial::row(ctx, 0..threads, untraced, body, Track::No);
                        continue;
                    };
                    let row = Span {
                        lo: first,
                        hi: first + threads as usize,
                    };
                    let inside = span(ctx, views, row)
                        .and(row)
                        .and(Span { lo: 0, hi: bound });
                    let inside = if inside.is_empty() {
                        0..0
                    } else {
                        (inside.lo - first) as u32..(inside.hi - first) as u32
                    };
                    if !inside.is_empty() {
                        let common = common.with_length(bound);
                        run_inside::<V, F>(ctx, inside.clone(), bound, views, common, body);
                    }
                    let ends = [0..inside.start, inside.end.max(inside.start)..threads];
                    for xs in ends {
                        serial::row(ctx, xs, untraced, body, Track::No);
                    }
                }
            },
            &mut || {
                let row = |ctx, xs| serial::row(ctx, xs, untraced, body, Track::Threads);
                replay(spec, &rows, base, segments.clone(), &row)
            },
        )
    })
}

/// The shape of a launch as rows cut into segments of whole blocks along x.
pub(crate) struct Rows {
    block: Dim3,
    grid_x: u32,
    /// Blocks along x in a segment (the last of a row may have fewer).
    chunk: u32,
    /// Segments per row.
    chunks: u64,
    /// Rows per z-slice of the grid: its threads along y.
    height: u64,
    /// Segments of the launch.
    segments: u64,
}

impl Rows {
    pub(crate) fn of(spec: &LaunchSpec) -> Rows {
        Rows::for_workers(spec, rayon::current_num_threads())
    }

    /// The rows of `spec` cut for `workers` cores: segments of at most [`TASK_THREADS`]
    /// threads, and where the grid has few rows (a 1-D grid is one), short enough that every
    /// core has a few of them, so that a launch of few threads, each with much to do, spreads
    /// over the cores as a long one does.
    fn for_workers(spec: &LaunchSpec, workers: usize) -> Rows {
        let (grid, block) = (spec.grid, spec.block);
        let rows = (grid.y as u64 * block.y as u64 * grid.z as u64 * block.z as u64).max(1);
        let per_row = (8 * workers as u64).div_ceil(rows);
        let chunk = (TASK_THREADS / block.x.max(1) as u64)
            .min((grid.x as u64).div_ceil(per_row))
            .clamp(1, grid.x.max(1) as u64) as u32;
        let chunks = grid.x.div_ceil(chunk) as u64;
        let height = grid.y as u64 * block.y as u64;
        Rows {
            block,
            grid_x: grid.x,
            chunk,
            chunks,
            height,
            segments: chunks * height * (grid.z as u64 * block.z as u64),
        }
    }

    /// Threads per segment (the last of a row may have fewer).
    fn segment_threads(&self) -> u64 {
        self.chunk as u64 * self.block.x as u64
    }

    /// Runs the launch `spec`'s segments as tasks spread over the cores (see `run_tasks`):
    /// `task(segments, shared, stop)` runs a range of them.
    pub(crate) fn run_tasks(&self, spec: &LaunchSpec, task: &Task) -> Result<(), KernelFault> {
        run_tasks(
            spec,
            self.segments,
            self.segment_threads(),
            TASK_THREADS,
            task,
        )
    }

    /// Segment `s`: the context of its first thread (its block's x the segment's first, its
    /// thread's x 0; the loop then counts thread x past the block's width), the grid x-index
    /// of that thread, and the number of threads.
    #[inline(always)]
    pub(crate) fn segment(&self, base: Ctx, s: u64) -> (Ctx, usize, u32) {
        let (row, c) = (s / self.chunks, s % self.chunks);
        let (gy, gz) = (row % self.height, row / self.height);
        let b = self.block;
        let x = c as u32 * self.chunk;
        let ctx = Ctx {
            block: Dim3::new(x, (gy / b.y as u64) as u32, (gz / b.z as u64) as u32),
            thread: Dim3::new(0, (gy % b.y as u64) as u32, (gz % b.z as u64) as u32),
            ..base
        };
        let threads = self.chunk.min(self.grid_x - x) * b.x;
        (ctx, x as usize * b.x as usize, threads)
    }
}

wide_variants!(
    /// The threads `inside` a segment's span, in a loop of its own, apart from the segment's
    /// ends, which the optimiser can vectorize.
    pub(crate) run_inside [V: LaunchViews, F: Fn(Ctx, V, bool) + Copy] [V, F]
    (ctx: Ctx, inside: Range<u32>, bound: usize, views: V, common: Common, body: F) => inside_loop
);

/// The loop of [`run_inside`]: the views reshaped to `common`, whose 1-D length is `bound`.
#[inline(always)]
fn inside_loop<V: LaunchViews, F: Fn(Ctx, V, bool) + Copy>(
    mut ctx: Ctx,
    inside: Range<u32>,
    bound: usize,
    views: V,
    common: Common,
    body: F,
) {
    // The grid x-index of thread x 0, computed as `grid(n)` computes it, so that the optimiser
    // sees the bound below as one on the kernel's own index.
    let first = ctx.block.x as usize * ctx.block_dim.x as usize;
    for x in inside {
        // SAFETY: `run_grid` cut the span below `bound`.
        unsafe { std::hint::assert_unchecked(first + (x as usize) < bound) };
        ctx.thread.x = x;
        // SAFETY: `common` holds the views' shapes (`run_grid` found them).
        body(ctx, unsafe { views.fast::<true>(&common) }, true);
    }
}

/// The segments of a task that faulted, again, thread by thread with each thread's own block
/// and thread recorded, so that the fault names them: `row(ctx, xs)` runs the threads `xs`
/// of the row of the thread `ctx`, each tracked. Compiled once: it runs only after a fault.
fn replay(
    spec: &LaunchSpec,
    rows: &Rows,
    base: Ctx,
    segments: Range<u64>,
    row: &dyn Fn(Ctx, Range<u32>),
) {
    let d = spec.block.x as usize;
    let launch = block_state(spec, 0, base.shared);
    for s in segments {
        let (ctx, first, threads) = rows.segment(base, s);
        for x in 0..threads as usize {
            let g = first + x;
            let state = BlockState {
                block: Dim3 {
                    x: (g / d) as u32,
                    ..ctx.block
                },
                ..launch
            };
            let thread = Dim3 {
                x: (g % d) as u32,
                ..ctx.thread
            };
            tls::BLOCK.with(|c| c.set(state));
            row(ctx_of(&state, thread), thread.x..thread.x + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: Span = Span { lo: 0, hi: 100 };

    /// Every index of `span` passes `test`, and every index of `ROW` outside it fails it
    /// (the span is exact on these small values).
    fn exact(span: Span, test: impl Fn(usize) -> bool) {
        for j in ROW.lo..ROW.hi {
            assert_eq!(
                span.lo <= j && j < span.hi,
                test(j),
                "j = {j}, span {span:?}"
            );
        }
    }

    #[test]
    fn each_test_narrows_the_span_to_where_it_holds() {
        for c in 0..4 {
            for e in 0..8 {
                exact(ROW.lt(c, e), |j| j + c < e);
                exact(ROW.le(c, e), |j| j + c <= e);
                exact(ROW.gt(c, e), |j| j + c > e);
                exact(ROW.ge(c, e), |j| j + c >= e);
            }
        }
    }

    #[test]
    fn a_sum_that_would_overflow_is_outside_the_span() {
        let all = Span {
            lo: 0,
            hi: usize::MAX,
        };
        let c = usize::MAX - 5;
        // `j + c` overflows from j = 6 on: those threads keep the body's own test.
        assert_eq!(all.gt(c, 0), Span { lo: 0, hi: 6 });
        assert_eq!(all.ge(c, 0), Span { lo: 0, hi: 6 });
        assert!(all.gt(0, usize::MAX).is_empty());
        assert!(all.lt(c, 3).is_empty());
    }

    #[test]
    fn rows_cut_a_launch_into_segments_of_whole_blocks() {
        let spec = LaunchSpec {
            kernel: "k",
            grid: Dim3::new(300, 2, 1),
            block: Dim3::new(256, 3, 1),
            shared_bytes: 0,
            barriers: false,
            thread_context: false,
            grid_level: true,
        };
        // On one core, eight segments or more: two segments per row of 150 blocks of 256
        // threads (at most 256 blocks), six rows.
        let rows = Rows::for_workers(&spec, 1);
        assert_eq!((rows.chunk, rows.chunks, rows.segments), (150, 2, 12));
        // On four, 32: six segments of 50 blocks per row.
        let four = Rows::for_workers(&spec, 4);
        assert_eq!((four.chunk, four.chunks, four.segments), (50, 6, 36));
        // A 1-D grid of 32 blocks is one row: 16 segments of 2 blocks on two cores.
        let line = LaunchSpec {
            grid: Dim3::new(32, 1, 1),
            block: Dim3::new(128, 1, 1),
            ..spec
        };
        let two = Rows::for_workers(&line, 2);
        assert_eq!((two.chunk, two.chunks, two.segments), (2, 16, 16));
        let base = ctx_of(&block_state(&spec, 0, std::ptr::null_mut()), Dim3::ZERO);
        let (ctx, first, threads) = rows.segment(base, 3);
        // Row 1 (block y 0, thread y 1), second segment: blocks 150..300.
        assert_eq!(
            (ctx.block, ctx.thread),
            (Dim3::new(150, 0, 0), Dim3::new(0, 1, 0))
        );
        assert_eq!((first, threads), (150 * 256, 150 * 256));
        let (ctx, _, _) = rows.segment(base, 8);
        assert_eq!(
            (ctx.block, ctx.thread),
            (Dim3::new(0, 1, 0), Dim3::new(0, 1, 0))
        );
    }
}
