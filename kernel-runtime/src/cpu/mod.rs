//! The CPU backend: runs every thread of a launch on the host's cores.
//!
//! How each form of a kernel's body runs is in [`bodies`]. Kernels without barriers run as plain
//! loops over the threads of a block, blocks spread over all cores by rayon; those that only
//! grid-level indices tell apart, as loops along the grid's rows ([`rows`]), and grid-stride
//! loops as one loop over their indices ([`strided`]). Kernels with barriers run each thread of
//! a block as a coroutine on its own small stack; a barrier suspends the thread until every
//! thread of the block has reached it, so a barrier inside a loop or a branch works, and one
//! that only part of the block reaches is reported as an error. A cooperative launch runs every
//! block as a coroutine too, all of them alive at once, so that they can meet at grid barriers
//! ([`sched::cooperative`]).
//!
//! Checked mode ([`Device::cpu_checked`](crate::Device::cpu_checked)) records each access to
//! writable and shared arrays in shadow memory ([`check`]), to report data races and reads of
//! shared memory never written ([`finding`]): every thread tracked, but for grid-level kernels,
//! which run by rows as on the fast path, their spans' accesses recorded a span at once.
//!
//! # Layers
//!
//! Each layer uses only those below it (`cargo xtask imports` checks that no files or folders
//! import each other in a circle):
//!
//! 1. [`launch`]: what a launch is: its shape, each block's state, each thread's context, the
//!    running thread's coordinates. [`fault`] and [`finding`]: how a launch fails.
//! 2. [`observer`]: what a scheduler tells checked mode as a block runs, a trait whose fast
//!    implementation does nothing.
//! 3. [`sched`]: the schedulers (coroutine threads, warps, cooperative grids, their stacks),
//!    with what threads meet at in one place ([`sched::rendezvous`]).
//! 4. The fast runs: [`exec`] (blocks over the cores, thread loops, coroutines), [`serial`],
//!    [`rows`], [`strided`], [`lockstep`]. And [`check`]: checked mode, all of it, the
//!    observer that keeps its records included.
//! 5. [`bodies`]: which run each form of a kernel's body takes, fast or checked.
//!
//! # Adding a warp collective
//!
//! 1. `sched/rendezvous.rs`: a [`WarpOp`](sched::rendezvous::WarpOp) for it, and its name.
//! 2. `sched/warp.rs`: `results`, what each lane of the mask gets from the lanes' values.
//! 3. `crate::warp`: the public function, its PTX on the GPU and `meet(WarpOp::…)` on the CPU,
//!    and the prelude's list in `lib.rs`.
//! 4. `lockstep.rs`: `operands::…`, with the public function's name and signature, for kernels
//!    the macro splits at their collectives.
//! 5. `kernel-macros/src/vocab.rs`: its name in `WARP_COLLECTIVES`, so that a kernel calling it
//!    is split or runs as coroutines.
//! 6. Tests: a kernel of `tests/warp.rs` that runs it on every backend, and a mask that leaves
//!    out a lane, in checked mode.
//!
//! Checked mode needs nothing more unless the collective orders memory accesses, as `syncwarp`
//! does: then the scheduler tells the [`Observer`](observer::Observer) (`warp::complete` calls
//! `syncwarp`), and `check/run.rs` keeps the order.

pub(crate) mod bodies;
pub mod check;
pub(crate) mod elementwise;
pub mod exec;
pub mod fault;
pub mod finding;
pub mod launch;
pub(crate) mod lockstep;
pub(crate) mod observer;
pub(crate) mod reduction;
pub mod rows;
pub(crate) mod sched;
pub(crate) mod serial;
pub(crate) mod slots;
pub(crate) mod strided;
pub(crate) mod tasks;
pub(crate) mod unwritten;
