//! What a block's scheduler tells checked mode as the block's threads run: which thread runs,
//! when a `syncwarp` orders lanes of a warp, when a barrier opens. The fast path observes
//! nothing ([`Unobserved`], whose calls compile to nothing); checked mode's observer (in
//! [`check`](super::check)) keeps the records from which it finds races.

use super::launch::BlockState;

/// The calls a scheduler makes to its observer, in the order a block runs.
pub(crate) trait Observer {
    /// Whether the block runs in checked mode: threads that wait at barriers of different lines
    /// have diverged, and what stops the block is a [`Finding`](super::finding::Finding).
    const CHECKED: bool;

    /// Thread `t` (linear index in its block) is about to run, in barrier interval `interval`;
    /// `phase` is the interval at which the grid's current phase started (0 outside a
    /// cooperative launch).
    fn resume(&mut self, t: usize, interval: u32, phase: u32);

    /// No thread of the block runs until the next round.
    fn pause(&mut self);

    /// A `syncwarp(mask)` completed for the warp whose lanes are the threads
    /// `first..first + lanes`.
    fn syncwarp(&mut self, first: usize, lanes: usize, mask: u32);

    /// Every live thread of the block waits at one barrier (or grid barrier), which opens next.
    fn barrier(&mut self);

    /// The block `state` has entered barrier interval `interval`.
    fn entered(&mut self, state: &BlockState, interval: u32);
}

/// The fast path's observer: sees nothing.
pub(crate) struct Unobserved;

impl Observer for Unobserved {
    const CHECKED: bool = false;

    #[inline(always)]
    fn resume(&mut self, _: usize, _: u32, _: u32) {}

    #[inline(always)]
    fn pause(&mut self) {}

    #[inline(always)]
    fn syncwarp(&mut self, _: usize, _: usize, _: u32) {}

    #[inline(always)]
    fn barrier(&mut self) {}

    #[inline(always)]
    fn entered(&mut self, _: &BlockState, _: u32) {}
}
