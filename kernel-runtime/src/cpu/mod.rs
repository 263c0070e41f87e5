//! The CPU backend: runs every thread of a launch on the host's cores.
//!
//! How each form of a kernel's body runs is in [`bodies`]. Kernels without barriers run as plain
//! loops over the threads of a block, blocks spread over all cores by rayon; those that only grid-level indices tell apart, as loops along the grid's
//! rows ([`rows`]). Kernels with barriers run each thread of a block as a coroutine on its
//! own small stack; a barrier suspends the thread until every thread of the block has reached
//! it, so a barrier inside a loop or a branch works, and one that only part of the block reaches
//! is reported as an error. A cooperative launch runs every block as a coroutine too, all of
//! them alive at once, so that they can meet at grid barriers ([`cooperative`]).
//!
//! Checked mode ([`Device::cpu_checked`](crate::Device::cpu_checked)) runs every thread tracked
//! and records each access to writable and shared arrays in shadow memory ([`check`]), to report
//! data races and reads of shared memory never written ([`finding`]).

pub(crate) mod bodies;
pub mod check;
pub(crate) mod context;
pub(crate) mod cooperative;
pub(crate) mod elementwise;
pub mod exec;
pub mod fault;
pub(crate) mod fibers;
pub mod finding;
pub(crate) mod lockstep;
pub(crate) mod overflow;
pub(crate) mod reduction;
pub mod rows;
pub(crate) mod serial;
pub(crate) mod shapes;
pub(crate) mod slots;
pub(crate) mod strided;
pub(crate) mod tls;
pub(crate) mod warp;
