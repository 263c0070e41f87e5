//! The schedulers: how the threads of a block, and the blocks of a cooperative grid, take
//! turns where a kernel makes them wait for each other.
//!
//! - [`rendezvous`]: what threads and blocks meet at, and how a running kernel thread stops
//!   for its scheduler. Every scheduler speaks these types.
//! - [`fibers`]: a block's threads as coroutines, round after round, meeting at barriers.
//! - [`warp`]: which lanes of a warp meet at a collective, and what each gets.
//! - [`cooperative`]: every block of a grid alive at once, meeting at grid barriers.
//! - [`overflow`]: the coroutines' stacks, and their overflow as a kernel fault.
//!
//! A scheduler tells an [`Observer`](super::observer::Observer) what happens as a block runs;
//! it never knows whether checked mode is watching.

pub(crate) mod cooperative;
pub(crate) mod fibers;
pub(crate) mod overflow;
pub(crate) mod rendezvous;
pub(crate) mod warp;
