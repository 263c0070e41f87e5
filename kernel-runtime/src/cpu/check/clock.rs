//! Warp clocks: the order that `syncwarp(mask)` gives the memory accesses of one warp's lanes,
//! for checked mode.
//!
//! As PTX defines `bar.warp.sync`, a `syncwarp(mask)` orders what each lane of `mask` did
//! before it with what every lane of `mask` does after it; shuffles, votes and matches order no
//! memory access. Within a barrier interval this is the only order between two threads of a
//! block, and only between lanes of one warp, so each thread of a block that runs as a
//! coroutine keeps a vector clock over the lanes of its warp: its own entry counts the
//! `syncwarp`s it has passed (starting at 1), each other entry the latest own entry of that lane
//! that has reached it through `syncwarp`s, directly or through other lanes.
//!
//! An access is recorded with its thread's own entry, its epoch. An access of lane `l` at epoch
//! `e` is ordered before the running thread's (of the same warp, block and interval) when the
//! running thread's entry for `l` is at least `e`: a `syncwarp` of `l` after the access has
//! reached it.

use crate::base::WARP_SIZE;
use std::cell::Cell;

/// A thread's clock: per lane of its warp, the latest epoch of that lane it has synchronized
/// with (its own entry: its own epoch).
pub(crate) type WarpClock = [u32; WARP_SIZE as usize];

/// The clock of lane `lane` at the start of a block: epoch 1, nothing seen of the others.
pub(crate) fn start(lane: usize) -> WarpClock {
    let mut clock = [0; WARP_SIZE as usize];
    clock[lane] = 1;
    clock
}

/// A completed `syncwarp(mask)` of the warp whose lanes' clocks are `clocks`: each lane of
/// `mask` learns what every other lane of it has seen, then starts its next epoch.
pub(crate) fn join(clocks: &mut [WarpClock], mask: u32) {
    let lanes = || (0..clocks.len()).filter(move |&l| mask & 1 << l != 0);
    let mut seen = [0; WARP_SIZE as usize];
    for l in lanes() {
        for (s, &c) in seen.iter_mut().zip(&clocks[l]) {
            *s = (*s).max(c);
        }
    }
    for l in lanes() {
        clocks[l] = seen;
        clocks[l][l] += 1;
    }
}

thread_local! {
    /// The running checked thread's clock; null where its block keeps none.
    static CURRENT: Cell<*const WarpClock> = const { Cell::new(std::ptr::null()) };
}

/// Makes `clock` the running thread's (null: none). The caller keeps it alive and unchanged
/// until the thread stops running or another clock is set.
pub(crate) fn set_current(clock: *const WarpClock) {
    CURRENT.with(|c| c.set(clock));
}

/// The latest epoch of lane `lane` that the running thread has synchronized with (0 when its
/// block keeps no clocks).
#[inline]
pub(crate) fn seen(lane: u32) -> u32 {
    let clock = CURRENT.with(|c| c.get());
    if clock.is_null() {
        return 0;
    }
    // SAFETY: `set_current`'s caller keeps the clock alive and unchanged while it is current.
    unsafe { (*clock)[(lane % WARP_SIZE) as usize] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncwarp_passes_epochs_along_its_mask_only() {
        let mut warp: Vec<WarpClock> = (0..32).map(start).collect();
        join(&mut warp, 0b011);
        // Lanes 0 and 1 have seen each other's first epoch and start their second.
        assert_eq!(
            (warp[0][0], warp[0][1], warp[1][0], warp[1][1]),
            (2, 1, 1, 2)
        );
        assert_eq!((warp[0][2], warp[2][0], warp[2][2]), (0, 0, 1));
        // Through lane 1, lane 2 learns of lane 0's first epoch, not of its second.
        join(&mut warp, 0b110);
        assert_eq!((warp[2][0], warp[2][1], warp[2][2]), (1, 2, 2));
        assert_eq!(warp[1][1], 3);
        // A partial warp: the clocks of the lanes that exist.
        let mut tail: Vec<WarpClock> = (0..4).map(start).collect();
        join(&mut tail, 0b1111);
        assert!(tail.iter().all(|c| c[..4].iter().sum::<u32>() == 5));
    }

    #[test]
    fn the_running_threads_clock_answers_seen() {
        let mut clock = start(3);
        clock[7] = 4;
        set_current(&clock);
        assert_eq!((seen(3), seen(7), seen(8)), (1, 4, 0));
        set_current(std::ptr::null());
        assert_eq!(seen(3), 0);
    }
}
