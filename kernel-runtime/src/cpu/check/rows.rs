//! Checked mode's run of a grid-level kernel: row by row, as the fast backend runs it (see
//! [`rows`](crate::cpu::rows)), the threads of a row's span at the fast backend's speed.
//!
//! A grid-level kernel has no barrier, shared memory or warp collective, so every two of its
//! threads are unordered, and what checked mode must know of an access is only which thread
//! made it, and where. Two ways give it that here:
//!
//! - **A span at once.** Where `#[kernel]` wrote a record of the kernel's guarded statement
//!   (each access to a writable array made once by every thread of a span, at an index that
//!   grows with the thread's x: see [`RecordSpan`]), the threads of a row's span run the fast
//!   body, untraced and vectorised, and the record then gives each access to the lanes for the
//!   whole span ([`SpanRecord`]), which check and record it in loops of their own
//!   (`Lane::record_run`). Every index of the span is proven within its array, so nothing else
//!   needs checking there.
//! - **A thread at a time.** The rest (a row's ends, kernels without a record) run checked
//!   mode's body one thread after another, each thread named in the views it is given
//!   ([`Trace::named`]) rather than made the running thread, so that no access looks it up.
//!
//! The records are those of every checked launch, so races are found and reported as they
//! are there, and the workers' lanes compared when the launch ends.
//!
//! [`Trace::named`]: super::Trace::named

use super::lane::{Conflict, Rec, Run};
use super::run::Forget;
use super::{launch, set_who, LaunchShadows, Target, Trace, Traced, Who};
use crate::base::AccessKind;
use crate::cpu::exec::untracked_then_replay;
use crate::cpu::fault::{raise_finding, KernelFault};
use crate::cpu::finding::{Finding, Reader};
use crate::cpu::launch::context::Ctx;
use crate::cpu::launch::shapes::LaunchViews;
use crate::cpu::launch::{block_state, ctx_of, tls, BlockState, LaunchSpec};
use crate::cpu::rows::{run_inside, Rows, Span};
use crate::dim::Dim3;
use std::ops::Range;
use std::panic::Location;

/// The bodies of a grid-level kernel that checked mode's rows run: the fast body (`fast`, its
/// views untraced), checked mode's body of one thread (`checked(ctx, views, inside)`), where
/// along a row its guard holds (`span(ctx, views, row)`) and, where `#[kernel]` wrote one, the
/// record of a span's accesses (`record`).
pub(crate) struct RowBodies<F, G, S, R> {
    pub(crate) fast: F,
    pub(crate) checked: G,
    pub(crate) span: S,
    pub(crate) record: R,
}

/// Runs every thread of a launch of a grid-level kernel with `bodies` in checked mode,
/// recording its accesses in `shadows` through the traced `views`; returns the first fault or
/// finding, the comparison of the workers' lanes included.
///
/// Where the kernel has a record of its spans and the arrays agree in shape (see
/// [`shapes`](crate::cpu::launch::shapes)), the threads of a row's span run the fast body, as
/// the fast backend's rows do, and the record then gives their accesses to the lanes one
/// access at a time, for all of the span's threads at once; a row's ends run thread by thread.
///
/// Only the kernel's bodies, bound to the views, are compiled per kernel; the rows are run by
/// [`run_erased`], compiled once.
pub(crate) fn run_rows<V, F, G, S, R>(
    spec: &LaunchSpec,
    shadows: &LaunchShadows,
    views: V,
    bodies: RowBodies<F, G, S, R>,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(Ctx, V, bool) + Copy + Sync,
    G: Fn(Ctx, V, bool) + Copy + Sync,
    S: Fn(Ctx, V, Span) -> Span + Sync,
    R: RecordSpan<V> + Sync,
{
    let shapes = views.shapes(true);
    let bound = shapes.length().unwrap_or(usize::MAX);
    // The fast body drops the read-only views' traces, and so their tests of elements nothing
    // has written: such a launch's threads run one at a time.
    let common = shapes
        .common()
        .filter(|_| R::BULK && !views.tests_unwritten())
        .map(|common| common.with_length(bound));
    let span = |ctx, row| (bodies.span)(ctx, views, row);
    let checked =
        |ctx, me: Who, inside| (bodies.checked)(ctx, views.named(me.block, me.thread), inside);
    let bulk_of;
    let bulk: Option<&BulkBody<'_>> = match common {
        Some(common) => {
            bulk_of = move |ctx, xs: Range<u32>, inside, record: &mut SpanRecord<'_>| {
                run_inside::<V, F>(ctx, xs, bound, views, common, bodies.fast);
                bodies.record.record(ctx, views, inside, record);
            };
            Some(&bulk_of)
        }
        None => None,
    };
    let rows = Erased {
        span: &span,
        checked: &checked,
        bulk,
        bound,
    };
    run_erased(spec, shadows, &rows)
}

/// The fast body's run of a segment's threads `xs` (x-indices from its first thread `ctx`),
/// whose grid x-indices are `inside`, with the record of their accesses given to `record`.
type BulkBody<'a> = dyn Fn(Ctx, Range<u32>, Span, &mut SpanRecord<'_>) + Sync + 'a;

/// A grid-level kernel's bodies, bound to its views, as [`run_erased`] runs them.
struct Erased<'a> {
    /// Where along a row its guard holds: `span(ctx, row)` of the row of the thread `ctx`.
    span: &'a (dyn Fn(Ctx, Span) -> Span + Sync),
    /// Checked mode's body of one thread: `checked(ctx, who, inside)`.
    checked: &'a (dyn Fn(Ctx, Who, bool) + Sync),
    /// Where a span's threads run the fast body and the record gives their accesses (the
    /// kernel has a record, its arrays agree in shape and none tests unwritten elements).
    bulk: Option<&'a BulkBody<'a>>,
    /// The 1-D arrays' length, or `usize::MAX`.
    bound: usize,
}

/// [`run_rows`] of the bodies `rows`.
fn run_erased(
    spec: &LaunchSpec,
    shadows: &LaunchShadows,
    bodies: &Erased<'_>,
) -> Result<(), KernelFault> {
    debug_assert!(spec.grid_level);
    let rows = Rows::of(spec);
    let numbers = Numbers::of(spec, shadows.first());
    rows.run_tasks(spec, &|segments, shared, _| {
        let launch = block_state(spec, 0, shared);
        // Reports take the launch's shape from here.
        tls::BLOCK.with(|c| c.set(launch));
        let base = ctx_of(&launch, Dim3::ZERO);
        let (first, _, _) = rows.segment(base, segments.start);
        let _lanes = shadows.enter(numbers.linear(first.block));
        let _who = Forget;
        let task = Task {
            rows: &rows,
            numbers: &numbers,
            launch: &launch,
        };
        let run = |track: bool| task.run(segments.clone(), bodies, track);
        untracked_then_replay(&mut || run(false), &mut || run(true))
    })?;
    shadows.compare(spec)
}

/// What each task of [`run_rows`] runs its segments with: the launch's rows, numbers and
/// state.
struct Task<'a> {
    rows: &'a Rows,
    numbers: &'a Numbers,
    launch: &'a BlockState,
}

impl Task<'_> {
    /// Runs the `segments`, each thread tracked where `track` says (the replay of a task that
    /// faulted).
    fn run(&self, segments: Range<u64>, bodies: &Erased<'_>, track: bool) {
        let base = ctx_of(self.launch, Dim3::ZERO);
        for s in segments {
            let (ctx, x0, threads) = self.rows.segment(base, s);
            let row = Span {
                lo: x0,
                hi: x0 + threads as usize,
            };
            let inside = (bodies.span)(ctx, row).and(row);
            let segment = Segment {
                ctx,
                threads,
                inside,
            };
            let ends = match bodies.bulk.filter(|_| !track) {
                Some(bulk) => {
                    let inside = inside.and(Span {
                        lo: 0,
                        hi: bodies.bound,
                    });
                    segment.bulk(self.numbers, bulk, inside)
                }
                None => [0..threads, 0..0],
            };
            for xs in ends {
                segment.run(self.numbers, self.launch, bodies.checked, track, xs);
            }
        }
    }
}

/// How the records number a launch's blocks and threads: a block by its linear index from the
/// launch's `first` on the block clock, a thread by its linear index in its block.
struct Numbers {
    first: u32,
    grid: Dim3,
    block: Dim3,
}

impl Numbers {
    fn of(spec: &LaunchSpec, first: u32) -> Numbers {
        Numbers {
            first,
            grid: spec.grid,
            block: spec.block,
        }
    }

    /// The linear index of block `b`.
    fn linear(&self, b: Dim3) -> u64 {
        let g = self.grid;
        b.x as u64 + g.x as u64 * (b.y as u64 + g.y as u64 * b.z as u64)
    }

    /// The linear index in its block of the thread `t` whose x is 0.
    fn row_thread(&self, t: Dim3) -> u32 {
        let d = self.block;
        d.x * (t.y + d.y * t.z)
    }

    /// The number and linear index of thread `x` (from the row's thread x 0) of a row whose
    /// first block has the linear index `first_block`, and whose thread x 0 has the linear
    /// index `row_thread` in it.
    fn who(&self, first_block: u64, row_thread: u32, x: usize) -> Who {
        let d = self.block.x as usize;
        Who {
            block: self
                .first
                .wrapping_add((first_block + (x / d) as u64) as u32),
            thread: row_thread + (x % d) as u32,
            ..Who::default()
        }
    }
}

/// One segment of a row: the context of its first thread (thread x 0 of its first block; x
/// counts on past the block's width), its number of threads and the grid x-indices in which
/// the kernel's guard holds.
struct Segment {
    ctx: Ctx,
    threads: u32,
    inside: Span,
}

impl Segment {
    /// Runs the threads of `inside` (grid x-indices, within the segment's) with the fast body,
    /// untraced, and gives their accesses to the lanes with the kernel's record (`bulk`); the
    /// threads of the segment left to run one at a time, before and after them.
    fn bulk(&self, numbers: &Numbers, bulk: &BulkBody<'_>, inside: Span) -> [Range<u32>; 2] {
        let x0 = self.ctx.block.x as usize * numbers.block.x as usize;
        if inside.is_empty() {
            return [0..self.threads, 0..0];
        }
        let xs = (inside.lo - x0) as u32..(inside.hi - x0) as u32;
        let mut record = SpanRecord {
            numbers,
            x0,
            first_block: numbers.linear(self.ctx.block),
            row_thread: numbers.row_thread(self.ctx.thread),
            span: inside,
        };
        bulk(self.ctx, xs.clone(), inside, &mut record);
        [0..xs.start, xs.end..self.threads]
    }

    /// Runs the segment's threads `xs` (x-indices from its first thread), each named in its
    /// views; with `track`, each made the running thread as well, so that a fault names it and
    /// is reported as a finding (the replay of a task that faulted).
    fn run(
        &self,
        numbers: &Numbers,
        launch: &BlockState,
        body: &(dyn Fn(Ctx, Who, bool) + Sync),
        track: bool,
        xs: Range<u32>,
    ) {
        let mut ctx = self.ctx;
        let first_block = numbers.linear(ctx.block);
        let row_thread = numbers.row_thread(ctx.thread);
        let x0 = ctx.block.x as usize * numbers.block.x as usize;
        for x in xs {
            ctx.thread.x = x;
            let me = numbers.who(first_block, row_thread, x as usize);
            if track {
                self.enter(launch, numbers, x);
                set_who(me);
            }
            let g = x0 + x as usize;
            let inside = self.inside.lo <= g && g < self.inside.hi;
            body(ctx, me, inside);
        }
    }

    /// Makes thread `x` (from the segment's thread x 0) the running thread, whose coordinates
    /// a fault reports.
    #[cold]
    fn enter(&self, launch: &BlockState, numbers: &Numbers, x: u32) {
        let d = numbers.block.x;
        let block = Dim3 {
            x: self.ctx.block.x + x / d,
            ..self.ctx.block
        };
        tls::BLOCK.with(|c| c.set(BlockState { block, ..*launch }));
        tls::set_thread(Dim3 {
            x: x % d,
            ..self.ctx.thread
        });
    }
}

/// Where along a row a grid-level kernel's accesses can be recorded for a whole span at once:
/// `#[kernel]`'s record of a guarded kernel whose guarded statement makes each of its accesses
/// to writable arrays once, whatever the thread, at an index that only grows with the thread's
/// x (see `run_rows`), or [`NoRecord`].
pub trait RecordSpan<V> {
    /// Whether the kernel has a record.
    const BULK: bool;
    /// Gives `record` the accesses of the threads of `span`, in the row of the thread `ctx`.
    fn record(&self, ctx: Ctx, views: V, span: Span, record: &mut SpanRecord<'_>);
}

impl<V, P: Fn(Ctx, V, Span, &mut SpanRecord<'_>)> RecordSpan<V> for P {
    const BULK: bool = true;
    #[inline(always)]
    fn record(&self, ctx: Ctx, views: V, span: Span, record: &mut SpanRecord<'_>) {
        self(ctx, views, span, record)
    }
}

/// The record of a kernel without one: its threads run one at a time in checked mode.
#[derive(Clone, Copy, Debug)]
pub struct NoRecord;

impl<V> RecordSpan<V> for NoRecord {
    const BULK: bool = false;
    fn record(&self, _: Ctx, _: V, _: Span, _: &mut SpanRecord<'_>) {}
}

/// The accesses of a span's threads as `#[kernel]`'s record gives them, one access of the
/// kernel's guarded statement at a time: its view, and its index at the span's first and last
/// thread. Each component of the index is the same for every thread of the span or grows by
/// one per thread (the span's proofs), so thread `k` of the span indexes the element `k` steps
/// past the first.
pub struct SpanRecord<'a> {
    numbers: &'a Numbers,
    /// The grid x-index of the row's thread x 0.
    x0: usize,
    /// The linear index of the row's first block, and of its thread x 0 in it.
    first_block: u64,
    row_thread: u32,
    span: Span,
}

impl SpanRecord<'_> {
    /// Each thread of the span writes `view` at its index (`first` at the span's first thread,
    /// `last` at its last).
    #[track_caller]
    #[inline(always)]
    pub fn write<const R: usize>(&mut self, view: Traced<R>, first: [usize; R], last: [usize; R]) {
        self.each(Run::Write, view, first, last, Location::caller())
    }

    /// Each thread of the span reads `view` at its index (as [`write`](Self::write)).
    #[track_caller]
    #[inline(always)]
    pub fn read<const R: usize>(&mut self, view: Traced<R>, first: [usize; R], last: [usize; R]) {
        self.each(Run::Read, view, first, last, Location::caller())
    }

    /// Each thread of the span reads `view` at its index, then writes it (a compound
    /// assignment, `c[i] += ..`; as [`write`](Self::write)).
    #[track_caller]
    #[inline(always)]
    pub fn update<const R: usize>(&mut self, view: Traced<R>, first: [usize; R], last: [usize; R]) {
        self.each(Run::Update, view, first, last, Location::caller())
    }

    /// [`record`](Self::record) of the accesses `run` to `view` from `first` to `last`.
    #[inline(always)]
    fn each<const R: usize>(
        &self,
        run: Run,
        view: Traced<R>,
        first: [usize; R],
        last: [usize; R],
        at: &'static Location<'static>,
    ) {
        let ends = (offset(first, view.dims), offset(last, view.dims));
        self.record(view.trace, (view.name, &view.dims), ends, (run, at))
    }

    /// Records the accesses `(run, at)` of each thread of the span to the array `(name, dims)`
    /// whose accesses `trace` records, at the elements `from..=to` (offsets at the span's first
    /// and last thread), one step apart; the kernel stops at the first race. Not generic, so
    /// that it is compiled once, in this crate.
    #[inline(never)]
    fn record(
        &self,
        trace: Trace,
        array: (&'static str, &[usize]),
        (from, to): (usize, usize),
        (run, at): (Run, &'static Location<'static>),
    ) {
        let Target::Global(index) = trace.target else {
            return;
        };
        // SAFETY: a current lane set lives until its launch has run every block.
        let Some(lane) = unsafe { launch::current().as_ref() }.and_then(|set| set.lane(index))
        else {
            return;
        };
        let (n, d) = (self.span.hi - self.span.lo, self.numbers.block.x as usize);
        let step = if n > 1 { (to - from) / (n - 1) } else { 0 };
        let x = self.span.lo - self.x0;
        let who = |k: usize| self.numbers.who(self.first_block, self.row_thread, x + k);
        let slot = trace.base + from * trace.stride;
        let threads = (who(0), (x % d) as u32, d as u32);
        let found = lane.record_run(run, (slot, step * trace.stride, n), threads, at);
        if let Err((k, conflict, kind)) = found {
            self.race(array, from + k * step, conflict, (who(k), kind, at))
        }
    }

    /// Stops the kernel with the race (or read of an element nothing has written) that the
    /// access `(me, kind, at)` to element `offset` of the array `(name, dims)` found.
    #[cold]
    fn race(
        &self,
        (name, dims): (&'static str, &[usize]),
        offset: usize,
        conflict: Conflict,
        (me, kind, at): (Who, AccessKind, &'static Location<'static>),
    ) -> ! {
        let (state, first) = (tls::block(), self.numbers.first);
        let access =
            |rec: Rec, kind, at| rec.access(kind, at, first, state.grid_dim, state.block_dim);
        let earlier = match conflict {
            Conflict::Race(earlier) => earlier,
            Conflict::Unwritten(origin) => raise_finding(Finding::UnwrittenRead {
                array: name,
                index: launch::unflatten(offset, dims),
                reader: Reader::Thread(access(Rec::of(me), kind, Some(at))),
                origin,
            }),
            Conflict::Uninitialized | Conflict::InFlight(_) => {
                unreachable!("checked rows touch no shared memory")
            }
        };
        raise_finding(Finding::DataRace {
            array: name,
            index: launch::unflatten(offset, dims),
            first: access(earlier.rec, earlier.kind, earlier.at),
            second: access(Rec::of(me), kind, Some(at)),
        })
    }
}

/// The offset of `index` in an array of shape `dims` (C order).
fn offset<const R: usize>(index: [usize; R], dims: [usize; R]) -> usize {
    index.iter().zip(dims).fold(0, |o, (i, d)| o * d + i)
}
