//! The forms of a kernel's fast body, and how the CPU backend runs each ([`FastRun`]).
//!
//! `#[kernel]` writes a kernel's fast body once, as a function of a thread's context, its views
//! and whether the thread lies where its guard is known to hold (only a grid-level kernel's
//! rows know: see `rows`), or of a block, for a body split at its barriers; and wraps it in the
//! form that says how it runs:
//!
//! | form | the body | run as |
//! | --- | --- | --- |
//! | [`Grid`] | `fn(ctx, views, inside)`, with its guard's `fn(ctx, views, row) -> Span` | rows along x (`rows`) |
//! | [`Strided`] | as [`Grid`], with its grid-stride loop's `fn(ctx, views, i)` and bound | once per index, in order (`strided`) |
//! | [`Strided2`] | as [`Strided`], for a 2-D nest: `fn(ctx, views, o, i)` and both bounds | once per pair, row by row (`strided`) |
//! | [`Blocks`] | `fn(ctx, views, false)` | thread loops, block by block |
//! | [`Coroutines`] | `fn(ctx, views, false)` | coroutines meeting at barriers and collectives (`fibers`) |
//! | [`Split`] | `fn(&BlockRun, views)` | a block at a time, its thread loops its own |
//! | [`Cooperative`], [`SplitCooperative`] | as [`Coroutines`], [`Split`] | every block alive at once (`cooperative`) |
//!
//! The runs compile the body into as few loops as give their speed: a fast loop (two copies,
//! the second for AVX-512 CPUs) with the views reshaped to the launch's common shapes (see
//! [`shapes`](super::launch::shapes)), and one copy that every other path shares (a row's ends,
//! launches whose arrays differ, tracked threads, the replay of a fault). Everything around
//! the loops (tasks over cores, fault handling) is compiled once, in this crate.

use super::check::{self, CheckedBlock, LaunchShadows, NoRecord, RecordSpan, RowBodies};
use super::exec::{self, BlockRun};
use super::fault::KernelFault;
use super::launch::context::Ctx;
use super::launch::shapes::{LaunchViews, ViewTypes};
use super::launch::{BlockState, LaunchSpec};
use super::rows::{self, Span};
use super::strided;

/// A kernel's fast body in one of the forms the CPU backend runs, for views of the parameters
/// `S` with index checks on or off (`CHECK`).
pub trait FastRun<S: ViewTypes, const CHECK: bool> {
    /// Whether the kernel's threads may meet at barriers or collectives: checked mode then runs
    /// them as coroutines, else one after another.
    const MEET: bool = true;

    /// Runs every thread of a launch of `spec` with `views`; the first fault.
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault>;

    /// Checked mode's run of a launch of `spec` in `shadows`, with the traced `views`:
    /// `checked(ctx, views, false)` is one thread. Threads that meet at barriers or
    /// collectives ([`FastRun::MEET`]) run as coroutines; others, one after another, the body
    /// called from one loop that every kernel shares (checked mode's price is the records it
    /// keeps, not calls).
    /// Grid-level forms run rows instead (`check::run_rows`).
    fn run_checked<G>(
        self,
        shadows: &LaunchShadows,
        spec: &LaunchSpec,
        cooperative: bool,
        views: S::Views<'_, CHECK>,
        checked: G,
    ) -> Result<(), KernelFault>
    where
        Self: Sized,
        G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    {
        threads_checked::<S, G, CHECK>(Self::MEET, shadows, spec, cooperative, views, checked)
    }
}

/// [`FastRun::run_checked`] thread by thread: as coroutines where they `meet`.
fn threads_checked<S, G, const CHECK: bool>(
    meet: bool,
    shadows: &LaunchShadows,
    spec: &LaunchSpec,
    cooperative: bool,
    views: S::Views<'_, CHECK>,
    checked: G,
) -> Result<(), KernelFault>
where
    S: ViewTypes,
    G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
{
    if meet {
        let body = move |ctx| checked(ctx, views, false);
        return shadows.run(spec, cooperative, CheckedBlock::Meeting(&body));
    }
    let threads = |state: &BlockState, block| {
        check::serial_block(state, block, &|ctx| checked(ctx, views, false))
    };
    shadows.run(spec, cooperative, CheckedBlock::Threads(&threads))
}

/// A grid-level kernel (only `grid(n)` and the launch's shape tell its threads apart): the body
/// `(ctx, views, inside)`, `inside` telling it that its guard holds; the `RowSpan` in which it
/// does: the guard's `(ctx, views, row) -> Span`, or [`WholeRow`] where the kernel has none; and
/// checked mode's record of a span's accesses (`(ctx, views, span, record)`, see
/// `RecordSpan`), or [`NoRecord`].
#[derive(Clone, Copy, Debug)]
pub struct Grid<F, P, R>(pub F, pub P, pub R);

/// Where along a row of threads a grid-level kernel's guard holds (see `rows`): the span of
/// `row` for the row's first thread `ctx`.
pub trait RowSpan<V> {
    /// The span of `row`.
    fn span(&self, ctx: Ctx, views: V, row: Span) -> Span;
}

impl<V, P: Fn(Ctx, V, Span) -> Span> RowSpan<V> for P {
    #[inline(always)]
    fn span(&self, ctx: Ctx, views: V, row: Span) -> Span {
        self(ctx, views, row)
    }
}

/// The span of a kernel without a guard: the row, whose threads then run the body as written.
#[derive(Clone, Copy, Debug)]
pub struct WholeRow;

impl<V> RowSpan<V> for WholeRow {
    #[inline(always)]
    fn span(&self, _ctx: Ctx, _views: V, row: Span) -> Span {
        row
    }
}

impl<S, F, P, R, const CHECK: bool> FastRun<S, CHECK> for Grid<F, P, R>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    P: for<'v> RowSpan<S::Views<'v, CHECK>> + Sync,
    R: for<'v> RecordSpan<S::Views<'v, CHECK>> + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        let span = self.1;
        rows::run_grid(spec, views, self.0, |ctx, views, row| {
            span.span(ctx, views, row)
        })
    }

    fn run_checked<G>(
        self,
        shadows: &LaunchShadows,
        spec: &LaunchSpec,
        _: bool,
        views: S::Views<'_, CHECK>,
        checked: G,
    ) -> Result<(), KernelFault>
    where
        G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    {
        let (span, record) = (self.1, self.2);
        let bodies = RowBodies {
            fast: self.0,
            checked,
            span: |ctx, views, row| span.span(ctx, views, row),
            record,
        };
        check::run_rows(spec, shadows, views, bodies)
    }
}

/// A grid-level 1-D kernel whose body is a grid-stride loop (see `strided`): the body
/// `(ctx, views, inside)` of a thread, as [`Grid`]'s; the loop's body `(ctx, views, i)` of one
/// index; and its bound `(ctx, views) -> n`. A launch whose grid or blocks extend along y or z
/// (whose threads share grid-level indices) runs the thread body as [`Grid`] does.
#[derive(Clone, Copy, Debug)]
pub struct Strided<F, I, B>(pub F, pub I, pub B);

impl<S, F, I, B, const CHECK: bool> FastRun<S, CHECK> for Strided<F, I, B>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    I: for<'v> Fn(Ctx, S::Views<'v, CHECK>, usize) + Copy + Sync,
    B: for<'v> Fn(Ctx, S::Views<'v, CHECK>) -> usize + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        let (grid, block) = (spec.grid, spec.block);
        if grid.y * grid.z * block.y * block.z != 1 {
            return rows::run_grid(spec, views, self.0, |_, _, row| row);
        }
        strided::run::<S::Views<'_, CHECK>, _, _>(spec, views, self.1, self.2)
    }

    fn run_checked<G>(
        self,
        shadows: &LaunchShadows,
        spec: &LaunchSpec,
        _: bool,
        views: S::Views<'_, CHECK>,
        checked: G,
    ) -> Result<(), KernelFault>
    where
        G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    {
        thread_rows_checked(spec, shadows, views, self.0, checked)
    }
}

/// A grid-level kernel whose body is a 2-D grid-stride nest (see `strided`): the body
/// `(ctx, views, inside)` of a thread, as [`Grid`]'s; the nest's body `(ctx, views, o, i)` of
/// one pair of indices, outer and inner; the outer loop's bound `(ctx, views) -> n`; the inner
/// loop's `(ctx, views, o) -> m`; and whether the outer loop walks the grid's y (else its x). A
/// launch that extends along z (whose threads share grid-level indices) runs the thread body as
/// [`Grid`] does.
#[derive(Clone, Copy, Debug)]
pub struct Strided2<F, I, B, C>(pub F, pub I, pub B, pub C, pub bool);

impl<S, F, I, B, C, const CHECK: bool> FastRun<S, CHECK> for Strided2<F, I, B, C>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    I: for<'v> Fn(Ctx, S::Views<'v, CHECK>, usize, usize) + Copy + Sync,
    B: for<'v> Fn(Ctx, S::Views<'v, CHECK>) -> usize + Sync,
    C: for<'v> Fn(Ctx, S::Views<'v, CHECK>, usize) -> usize + Copy + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        if spec.grid.z * spec.block.z != 1 {
            return rows::run_grid(spec, views, self.0, |_, _, row| row);
        }
        let nest = strided::Nest {
            index: self.1,
            bound: self.2,
            inner: self.3,
            outer_y: self.4,
        };
        strided::run_nest::<S::Views<'_, CHECK>, _, _, _>(spec, views, nest)
    }

    fn run_checked<G>(
        self,
        shadows: &LaunchShadows,
        spec: &LaunchSpec,
        _: bool,
        views: S::Views<'_, CHECK>,
        checked: G,
    ) -> Result<(), KernelFault>
    where
        G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
    {
        thread_rows_checked(spec, shadows, views, self.0, checked)
    }
}

/// Checked mode's run of a grid-level kernel whose thread body (`fast`, and checked mode's
/// `checked`) runs as a whole, one thread at a time along the rows.
fn thread_rows_checked<V, F, G>(
    spec: &LaunchSpec,
    shadows: &LaunchShadows,
    views: V,
    fast: F,
    checked: G,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(Ctx, V, bool) + Copy + Sync,
    G: Fn(Ctx, V, bool) + Copy + Sync,
{
    let bodies = RowBodies {
        fast,
        checked,
        span: |_: Ctx, _: V, row: Span| row,
        record: NoRecord,
    };
    check::run_rows(spec, shadows, views, bodies)
}

/// A block-level kernel without barriers: the body `(ctx, views, false)` of one thread.
#[derive(Clone, Copy, Debug)]
pub struct Blocks<F>(pub F);

impl<S, F, const CHECK: bool> FastRun<S, CHECK> for Blocks<F>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
{
    const MEET: bool = false;

    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        exec::run_blocks(spec, views, self.0)
    }
}

/// A kernel whose threads meet at barriers or warp collectives that the macro does not split
/// at: the body `(ctx, views, false)` of one thread, run as a coroutine.
#[derive(Clone, Copy, Debug)]
pub struct Coroutines<F>(pub F);

impl<S, F, const CHECK: bool> FastRun<S, CHECK> for Coroutines<F>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        let views = views.untraced();
        exec::run_coroutines(spec, &|ctx| (self.0)(ctx, views, false))
    }
}

/// A kernel split at its barriers and warp collectives: the body `(block, views)` runs a
/// block's threads, region by region. `WIDE`: compiled a second time for AVX-512 CPUs (the
/// macro asks for it where no atomic orders the threads' work).
#[derive(Clone, Copy, Debug)]
pub struct Split<F, const WIDE: bool>(pub F);

impl<S, F, const CHECK: bool, const WIDE: bool> FastRun<S, CHECK> for Split<F, WIDE>
where
    S: ViewTypes,
    F: for<'v> Fn(&BlockRun<'_>, S::Views<'v, CHECK>) + Copy + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        exec::run_split::<_, _, WIDE>(spec, views, self.0)
    }
}

/// A cooperative kernel (one that waits at grid barriers) whose threads run as coroutines: the
/// body `(ctx, views, false)` of one thread.
#[derive(Clone, Copy, Debug)]
pub struct Cooperative<F>(pub F);

impl<S, F, const CHECK: bool> FastRun<S, CHECK> for Cooperative<F>
where
    S: ViewTypes,
    F: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        let views = views.untraced();
        exec::run_cooperative(spec, &|ctx| (self.0)(ctx, views, false))
    }
}

/// A cooperative kernel split at its barriers and grid barriers: the body `(block, views)`.
#[derive(Clone, Copy, Debug)]
pub struct SplitCooperative<F>(pub F);

impl<S, F, const CHECK: bool> FastRun<S, CHECK> for SplitCooperative<F>
where
    S: ViewTypes,
    F: for<'v> Fn(&BlockRun<'_>, S::Views<'v, CHECK>) + Copy + Sync,
{
    fn run(self, spec: &LaunchSpec, views: S::Views<'_, CHECK>) -> Result<(), KernelFault> {
        exec::run_split_cooperative(spec, views, self.0)
    }
}
