//! Running a launch: blocks over rayon, threads as a loop or as coroutines meeting at barriers
//! (see the `fibers` module).

use super::fault::{self, raise, KernelFault};
use super::launch::context::Ctx;
use super::launch::shapes::{Common, LaunchViews};
use super::launch::{block_state, ctx_of, enter_thread, thread_coords, tls};
use super::launch::{BlockState, LaunchSpec};
use super::observer::Unobserved;
use super::sched::cooperative;
use super::sched::fibers::run_fibers;
use super::sched::rendezvous::{block_arrives, first_thread_left, At, GridStop, FIBER};
use super::serial::{self, Track};
use crate::dim::Dim3;
use rayon::prelude::*;
use std::cell::RefCell;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

thread_local! {
    /// This worker's shared memory (reused by every block it runs; 16-byte aligned).
    static SHARED: RefCell<Vec<u128>> = const { RefCell::new(Vec::new()) };
}

/// Runs a block-level kernel without barriers (see `cpu::bodies::Blocks`): `body(ctx, views)`
/// is one thread. Where the arrays of each rank agree (see [`shapes`](super::shapes)), a
/// group of blocks is one untracked loop nest with the views reshaped, replayed block by
/// block, thread by thread, on a fault; launches whose arrays differ, and kernels that ask for
/// their coordinates from outside their body, run the views as they are in one copy of the
/// loop.
pub(crate) fn run_blocks<V, F>(spec: &LaunchSpec, views: V, body: F) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(Ctx, V, bool) + Copy + Sync,
{
    let common = views.shapes(false).common();
    run_groups(spec, &|blocks, shared, stop| {
        let untraced = views.untraced();
        let each =
            |track: Track| move |state: &BlockState| serial::block(state, untraced, body, track);
        if spec.thread_context {
            let tracked = each(Track::Threads);
            return for_each_block(spec, blocks.clone(), shared, Some(stop), &tracked);
        }
        let tracked =
            &mut || for_each_block(spec, blocks.clone(), shared, None, &each(Track::Threads));
        match common {
            Some(c) => untracked_then_replay(
                &mut || run_fast_blocks::<V, F>(spec, blocks.clone(), shared, views, c, body),
                tracked,
            ),
            None => untracked_then_replay(
                &mut || for_each_block(spec, blocks.clone(), shared, None, &each(Track::No)),
                tracked,
            ),
        }
    })
}

/// Runs a kernel whose threads meet at barriers or warp collectives as coroutines (see the
/// `fibers` module); a block of one thread runs it as a loop. `body` is one thread.
pub(crate) fn run_coroutines(
    spec: &LaunchSpec,
    body: &(dyn Fn(Ctx) + Sync),
) -> Result<(), KernelFault> {
    let coords = thread_coords(spec.block);
    let fibers = spec.block.volume() > 1;
    run_blocks_each(spec, &|state| {
        if fibers {
            run_fibers(state, &coords, body, &mut Unobserved)
        } else {
            tls::set_thread(Dim3::ZERO);
            body(ctx_of(state, Dim3::ZERO))
        }
    })
}

/// Runs a split kernel (see `cpu::bodies::Split`): `body` runs a block's threads itself,
/// region by region between barriers. Where the arrays of each rank agree, it runs with the
/// views reshaped (compiled a second time for AVX-512 CPUs where `WIDE`); otherwise with the
/// views as they are, in the one copy of it that replays a block that faulted, tracked.
pub(crate) fn run_split<V, F, const WIDE: bool>(
    spec: &LaunchSpec,
    views: V,
    body: F,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(&BlockRun<'_>, V) + Copy + Sync,
{
    let common = views.shapes(false).common();
    let coords = thread_coords(spec.block);
    run_blocks_each(spec, &|state| {
        let block = |track: bool| BlockRun {
            state,
            coords: &coords,
            track,
        };
        let run = |block: &BlockRun<'_>| match common {
            // SAFETY: the CPU has the features `split_wide` is compiled for.
            _ if WIDE && wide_vectors() => unsafe { split_wide(block, views, common, body) },
            Some(c) => split_plain(block, views, c, body),
            None => split_once(block, views, body),
        };
        // A kernel that asks for its coordinates from outside its body runs tracked.
        if spec.thread_context {
            return run(&block(true));
        }
        untracked_then_replay(&mut || run(&block(false)), &mut || {
            split_once(&block(true), views, body)
        })
    })
}

/// A split kernel's block with the views as they are (untraced): the one copy of its body
/// that the runs which are not fast share.
#[inline(never)]
fn split_once<V: LaunchViews, F: Fn(&BlockRun<'_>, V)>(block: &BlockRun<'_>, views: V, body: F) {
    body(block, views.untraced())
}

/// A split kernel's block with the views reshaped to `common`, for the baseline CPU.
#[inline(never)]
fn split_plain<V: LaunchViews, F: Fn(&BlockRun<'_>, V)>(
    block: &BlockRun<'_>,
    views: V,
    common: Common,
    body: F,
) {
    // SAFETY: `common` holds the views' shapes (`run_split` found them).
    body(block, unsafe { views.fast::<false>(&common) })
}

/// [`split_plain`] compiled for AVX-512 CPUs, and [`split_once`] where the launch's arrays
/// differ in shape (`common` is `None`).
///
/// # Safety
/// The CPU must have the features it is compiled for ([`wide_vectors`]).
#[inline(never)]
#[cfg_attr(
    target_arch = "x86_64",
    target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")
)]
unsafe fn split_wide<V: LaunchViews, F: Fn(&BlockRun<'_>, V)>(
    block: &BlockRun<'_>,
    views: V,
    common: Option<Common>,
    body: F,
) {
    match common {
        // SAFETY: as in `split_plain`.
        Some(c) => body(block, unsafe { views.fast::<false>(&c) }),
        None => body(block, views.untraced()),
    }
}

/// [`run_coroutines`] for a cooperative launch (a kernel with grid barriers): every block alive
/// at once, its threads as coroutines, the blocks over one worker per core (see the CPU
/// backend's `cooperative` module).
pub(crate) fn run_cooperative(
    spec: &LaunchSpec,
    body: &(dyn Fn(Ctx) + Sync),
) -> Result<(), KernelFault> {
    let coords = thread_coords(spec.block);
    cooperative::launch(spec, rayon::current_num_threads(), false, &|_, state| {
        run_fibers(state, &coords, body, &mut Unobserved)
    })
}

/// [`run_split`] for a cooperative launch whose grid barriers split it. A block that faults
/// cannot be replayed once others have passed a grid barrier: its threads are tracked from the
/// start.
pub(crate) fn run_split_cooperative<V, F>(
    spec: &LaunchSpec,
    views: V,
    body: F,
) -> Result<(), KernelFault>
where
    V: LaunchViews,
    F: Fn(&BlockRun<'_>, V) + Copy + Sync,
{
    let coords = thread_coords(spec.block);
    cooperative::launch(spec, rayon::current_num_threads(), false, &|_, state| {
        let block = BlockRun {
            state,
            coords: &coords,
            track: true,
        };
        split_once(&block, views, body)
    })
}

/// Runs `untracked`, which does not record which thread runs; if it faults, runs `tracked`, the
/// same work recording each thread, so that the fault is reported with its thread, then
/// reports the first fault if the replay did not (the launch has failed either way).
///
/// Both run through `dyn`: the unwinding machinery is compiled once, not once per kernel.
pub(crate) fn untracked_then_replay(untracked: &mut dyn FnMut(), tracked: &mut dyn FnMut()) {
    tls::set_thread(tls::UNKNOWN_THREAD);
    if let Err(first) = catch_unwind(AssertUnwindSafe(untracked)) {
        tracked();
        tls::set_thread(tls::UNKNOWN_THREAD);
        std::panic::resume_unwind(first)
    }
}

/// Whether the thread loops of kernels run their copies compiled for AVX-512 CPUs: where this
/// CPU has the subsets they are compiled for (`avx512f`, `avx512bw`, `avx512vl`), unless
/// `KERNEL_CPU_VECTORS=baseline` asks for the baseline copies, which CPUs without AVX-512 run
/// (to test those on a CPU with it).
pub fn wide_vectors() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| {
        let setting = std::env::var("KERNEL_CPU_VECTORS").ok();
        !baseline_asked(setting.as_deref()) && avx512()
    })
}

/// Whether `KERNEL_CPU_VECTORS` (its value, if set) asks for the baseline copies; a value other
/// than `baseline` and `auto` is said once on stderr and ignored.
fn baseline_asked(setting: Option<&str>) -> bool {
    match setting {
        Some("baseline") => true,
        None | Some("" | "auto") => false,
        Some(v) => {
            eprintln!(
                "kernel-runtime: KERNEL_CPU_VECTORS={v:?} is not `baseline` or `auto`: ignored, \
                 the CPU's own vectors are used"
            );
            false
        }
    }
}

/// Whether this CPU has the AVX-512 subsets the wide copies are compiled for.
fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether every thread of a split kernel's block has exited, by its flags `exited`.
#[inline(never)]
pub fn all_exited(exited: &[bool]) -> bool {
    exited.iter().all(|&e| e)
}

/// One block of a split kernel: its threads' contexts and the barrier checks between regions.
pub struct BlockRun<'a> {
    pub(crate) state: &'a BlockState,
    pub(crate) coords: &'a [Dim3],
    /// Whether each thread's coordinates are recorded as it runs (for code outside the body
    /// and for fault reports).
    pub(crate) track: bool,
}

impl BlockRun<'_> {
    /// Threads in the block.
    #[inline(always)]
    pub fn threads(&self) -> usize {
        self.coords.len()
    }

    /// Makes thread `t` the current one; returns its context.
    #[inline(always)]
    pub fn enter(&self, t: usize) -> Ctx {
        let (base, track) = self.base();
        let Dim3 { x, y, z } = self.coords[t];
        enter_thread(base, track, x, y, z)
    }

    /// The coordinates of thread `t` (by linear index).
    #[inline(always)]
    pub fn coord(&self, t: usize) -> Dim3 {
        self.coords[t]
    }

    /// The block's shape.
    #[inline(always)]
    pub fn shape(&self) -> Dim3 {
        self.state.block_dim
    }

    /// Whether the block has the shape `x × y × z` that the kernel's first shared array
    /// suggests, and runs untracked: its regions then run thread loops with these constant
    /// bounds, in which the optimiser can prove indices such as `tile[[ty, tx]]` in bounds and
    /// vectorize.
    #[inline(always)]
    pub fn hinted(&self, x: u32, y: u32, z: u32) -> bool {
        !self.track && x > 0 && self.state.block_dim == Dim3::new(x, y, z)
    }

    /// The block's context for thread `(0, 0, 0)` and whether threads are tracked: a region
    /// takes both into locals once, before its thread loop, so that they stay in registers.
    #[inline(always)]
    pub fn base(&self) -> (Ctx, bool) {
        (ctx_of(self.state, Dim3::ZERO), self.track)
    }

    /// Runs a region of a split kernel for every thread of the block that has not exited:
    /// `run(ctx, t)` is thread `t`, and says whether it returned. `exited` holds each thread's
    /// flag, `some_exited` whether any is set. A block of the shape `hint` that the kernel's
    /// first shared array suggests (see [`hinted`](Self::hinted)), none of whose threads has
    /// exited, runs a loop whose bounds the optimiser knows to be at most the hint's: it can
    /// prove indices such as `tile[[ty, tx]]` in bounds, and vectorize. Returns whether every
    /// thread has now exited (nothing more of the block runs then).
    #[inline(always)]
    pub fn region(
        &self,
        (hx, hy, hz): (u32, u32, u32),
        exited: &mut [bool],
        some_exited: &mut bool,
        mut run: impl FnMut(Ctx, usize) -> bool,
    ) -> bool {
        let shape = self.shape();
        let (base, track) = self.base();
        // The flags are the block's, one per thread (`flags(threads())`).
        assert!(exited.len() >= self.coords.len());
        let mut gone_here = false;
        if self.hinted(hx, hy, hz) && !*some_exited {
            // SAFETY: `hinted` checked that the block has the hinted shape. The bounds stay the
            // block's, known to be at most the hint: the optimiser does not unroll the loop
            // completely, which would leave only straight-line vectorization, unable to check
            // at run time that the arrays do not overlap.
            let (dx, dy, dz) = unsafe {
                std::hint::assert_unchecked(shape.x <= hx);
                std::hint::assert_unchecked(shape.y <= hy);
                std::hint::assert_unchecked(shape.z <= hz);
                (shape.x, shape.y, shape.z)
            };
            for z in 0..dz {
                for y in 0..dy {
                    let row = (z as usize * dy as usize + y as usize) * dx as usize;
                    for x in 0..dx {
                        let t = row + x as usize;
                        if run(enter_thread(base, false, x, y, z), t) {
                            // SAFETY: `t` is below the thread count, `exited`'s length at most.
                            unsafe { *exited.get_unchecked_mut(t) = true };
                            gone_here = true;
                        }
                    }
                }
            }
        } else {
            let (dx, dy, dz) = (shape.x, shape.y, shape.z);
            for z in 0..dz {
                for y in 0..dy {
                    let row = (z as usize * dy as usize + y as usize) * dx as usize;
                    for x in 0..dx {
                        let t = row + x as usize;
                        // SAFETY: as above.
                        if !unsafe { *exited.get_unchecked(t) }
                            && run(enter_thread(base, track, x, y, z), t)
                        {
                            // SAFETY: as above.
                            unsafe { *exited.get_unchecked_mut(t) = true };
                            gone_here = true;
                        }
                    }
                }
            }
        }
        *some_exited |= gone_here;
        gone_here && all_exited(exited)
    }

    /// The barrier at `location`, after a region. A thread that has exited counts as arrived,
    /// as on a GPU, where it no longer holds the block's barrier: the threads left go on.
    #[inline(always)]
    pub fn barrier(&self, _exited: &[bool], _some_exited: bool, _location: &'static str) {}

    /// The grid barrier at `location` of a cooperative launch, after a region: the block waits
    /// until every block of the grid has stopped at a grid barrier. Its exited threads count as
    /// arrived ([`barrier`](Self::barrier)).
    ///
    /// A block whose threads have all exited does not arrive: it ends without reaching the
    /// barrier, which the launch reports if other blocks wait there (a GPU would wait for it
    /// forever).
    pub fn grid_barrier(&self, exited: &[bool], some_exited: bool, location: &'static str) {
        if some_exited && all_exited(exited) {
            return;
        }
        if some_exited && exited[0] {
            first_thread_left(self.state, location);
        }
        block_arrives(GridStop {
            interval: 0,
            location: At::Text(location),
        });
    }

    /// Threads `a` and `b` disagree on whether or how often a loop holding a barrier runs.
    pub fn nonuniform(&self, a: usize, b: usize, location: &'static str) -> ! {
        raise(format!(
            "divergent barrier in kernel `{}`, block {}: threads {} and {} disagree on the iterations of the loop at {location}, which holds a sync_threads()",
            self.state.kernel, self.state.block, self.coords[a], self.coords[b],
        ))
    }
}

/// Runs `per_block` for every block, in parallel, with the block's shared memory and
/// coordinates in place; returns the first fault's message.
fn run_blocks_each(
    spec: &LaunchSpec,
    per_block: &(dyn Fn(&BlockState) + Sync),
) -> Result<(), KernelFault> {
    run_groups(spec, &|blocks, shared, stop| {
        for_each_block(spec, blocks, shared, Some(stop), per_block)
    })
}

/// Runs `per_block` for the blocks of `blocks` in order, each with its coordinates recorded;
/// stops early once `stop` is set.
fn for_each_block(
    spec: &LaunchSpec,
    blocks: Range<u64>,
    shared: *mut u8,
    stop: Option<&AtomicBool>,
    per_block: &dyn Fn(&BlockState),
) {
    for b in blocks {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return;
        }
        let state = block_state(spec, b, shared);
        tls::BLOCK.with(|c| c.set(state));
        per_block(&state);
    }
}

/// What a task runs: a range of units, with its worker's shared memory and the flag that is set
/// once a task has faulted. Through `dyn`, so that rayon's machinery is compiled once, in this
/// crate, not once per kernel.
pub(crate) type Task<'a> = dyn Fn(Range<u64>, *mut u8, &AtomicBool) + Sync + 'a;

/// Runs `per_group` for groups of consecutive blocks (by linear index), in parallel, each with
/// its worker's shared memory and the flag that is set once a group has faulted; returns the
/// first fault's message.
pub(crate) fn run_groups(spec: &LaunchSpec, per_group: &Task) -> Result<(), KernelFault> {
    // Small blocks are grouped so that each task has a few thousand threads: the per-task costs
    // (shared memory, fault handling) are paid once per group.
    run_tasks(
        spec,
        spec.grid.volume(),
        spec.block.volume(),
        4096,
        per_group,
    )
}

/// Runs `run` for ranges of consecutive units (blocks, or the row segments of
/// [`run_grid`](super::rows::run_grid)) of `0..units`, each of `unit_threads` threads, in
/// parallel: a task takes about `task_threads` threads, and every core at least a few tasks.
/// Each gets its worker's shared memory and the flag that is set once a task has faulted;
/// returns the first fault's message.
pub(crate) fn run_tasks(
    spec: &LaunchSpec,
    units: u64,
    unit_threads: u64,
    task_threads: u64,
    run: &Task,
) -> Result<(), KernelFault> {
    let per_task = (task_threads / unit_threads.max(1)).clamp(
        1,
        (units / (8 * rayon::current_num_threads() as u64)).max(1),
    );
    let stop = AtomicBool::new(false);
    let first_fault = Mutex::new(None::<KernelFault>);
    let run_task = |g: u64| {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        SHARED.with(|buf| {
            let mut buf = buf.borrow_mut();
            let words = crate::cpu::launch::sites::block_bytes(spec.shared_bytes).div_ceil(16);
            if buf.len() < words {
                buf.resize(words, 0);
            }
            let shared = buf.as_mut_ptr() as *mut u8;
            let range = g * per_task..((g + 1) * per_task).min(units);
            let panics = fault::KernelPanics::begin();
            let result = catch_unwind(AssertUnwindSafe(|| run(range, shared, &stop)));
            drop(panics);
            if let Err(payload) = result {
                let message = fault::describe(payload);
                stop.store(true, Ordering::Relaxed);
                let mut first = first_fault.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(message);
            }
            tls::BLOCK.with(|c| c.set(BlockState::NONE));
            FIBER.with(|c| c.set(std::ptr::null()));
        });
    };
    let tasks = units.div_ceil(per_task);
    if tasks == 1 {
        run_task(0);
    } else {
        (0..tasks).into_par_iter().for_each(run_task);
    }
    match first_fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// A function `$name` that runs the thread loops `$loops` with its arguments, compiled twice:
/// for the baseline CPU and, on x86-64, with the AVX-512 features whose masked loads and stores
/// let a thread loop whose body is guarded (`if i < n { .. }`) vectorize; [`wide_vectors`]
/// picks one at each call. Each copy is a function of its own, so that the optimiser inlines the
/// kernel's body into each loop with a full budget. `[$gen]` declares the generic parameters,
/// `[$args]` names them.
macro_rules! wide_variants {
    ($(#[$attr:meta])* $vis:vis $name:ident [$($gen:tt)*] [$($args:tt)*] ($($arg:ident: $ty:ty),*) => $loops:ident) => {
        $(#[$attr])*
        #[inline(always)]
        $vis fn $name<$($gen)*>($($arg: $ty),*) {
            #[inline(never)]
            fn plain<$($gen)*>($($arg: $ty),*) {
                $loops::<$($args)*>($($arg),*)
            }
            // Called only where the CPU has the features this is compiled for.
            #[cfg(target_arch = "x86_64")]
            #[inline(never)]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
            unsafe fn avx512<$($gen)*>($($arg: $ty),*) {
                $loops::<$($args)*>($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::cpu::exec::wide_vectors() {
                // SAFETY: the CPU has every feature `avx512` is compiled for (checked above).
                return unsafe { avx512::<$($args)*>($($arg),*) };
            }
            plain::<$($args)*>($($arg),*)
        }
    };
}
pub(crate) use wide_variants;

wide_variants!(
    /// The thread loops of a group of blocks, the views reshaped to `common`.
    run_fast_blocks [V: LaunchViews, F: Fn(Ctx, V, bool) + Copy] [V, F]
    (spec: &LaunchSpec, blocks: Range<u64>, shared: *mut u8, views: V, common: Common, body: F)
        => fast_blocks
);

/// Runs the threads of `blocks`, block after block, without recording who runs, the views
/// reshaped to `common`.
#[inline(always)]
fn fast_blocks<V: LaunchViews, F: Fn(Ctx, V, bool) + Copy>(
    spec: &LaunchSpec,
    blocks: Range<u64>,
    shared: *mut u8,
    views: V,
    common: Common,
    body: F,
) {
    let mut ctx = ctx_of(&block_state(spec, blocks.start, shared), Dim3::ZERO);
    let (d, g) = (ctx.block_dim, ctx.grid_dim);
    for _ in blocks {
        for z in 0..d.z {
            for y in 0..d.y {
                for x in 0..d.x {
                    ctx.thread = Dim3 { x, y, z };
                    // SAFETY: `common` holds the views' shapes (`run_blocks` found them).
                    body(ctx, unsafe { views.fast::<false>(&common) }, false);
                }
            }
        }
        // The next block by linear index (x fastest), without dividing.
        let b = &mut ctx.block;
        b.x += 1;
        if b.x == g.x {
            b.x = 0;
            b.y += 1;
            if b.y == g.y {
                b.y = 0;
                b.z += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::baseline_asked;

    #[test]
    fn kernel_cpu_vectors_asks_for_the_baseline_by_name_only() {
        assert!(baseline_asked(Some("baseline")));
        for other in [None, Some(""), Some("auto"), Some("avx2")] {
            assert!(!baseline_asked(other), "{other:?}");
        }
    }
}
