//! Checked mode's record of a block's warpgroup products (`wgmma`), kept with the shadow of its
//! shared memory:
//!
//! - the shared memory each product *in flight* reads: on a GPU the tensor cores read a
//!   product's operands at any time until its warp waits for the product's group, so a write
//!   there before that wait (or, by another warp, before the barrier after it) races with them.
//!   The CPU backend multiplies at the call, where such a write changes nothing; this record is
//!   how checked mode finds it.
//! - the operations each warp of a warpgroup has called: the four warps call each one together,
//!   at one place, which the per-warp meeting of the lanes cannot see.
//!
//! Each warp keeps its own record, written by one lane of it once its lanes have met.

use super::Who;
use crate::base::WARP_SIZE;
use std::collections::VecDeque;
use std::panic::Location;

/// Warps per warpgroup.
const WARPS: usize = 4;

/// A product's operand bytes in the block's shared memory, `start .. end`, which warp `warp`
/// started at `at` in its group `group`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flight {
    start: usize,
    end: usize,
    warp: u32,
    group: u32,
    /// The barrier interval in which the warp waited for the group, once it has.
    waited: Option<u32>,
    /// The product's call.
    pub(crate) at: &'static Location<'static>,
}

impl Flight {
    /// The warpgroup that started the product.
    pub(crate) fn warpgroup(&self) -> u32 {
        self.warp / WARPS as u32
    }

    /// Whether the write of `me` to byte `slot` races with the product's reads: the warp had
    /// not waited for it, or `me` is of another warp and no barrier lies between the wait and
    /// the write.
    fn hit(&self, slot: usize, me: Who) -> bool {
        (self.start..self.end).contains(&slot)
            && match self.waited {
                None => true,
                Some(interval) => interval == me.interval && me.thread / WARP_SIZE != self.warp,
            }
    }
}

/// One warpgroup operation as a warp called it: which, where, with which tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) name: &'static str,
    pub(crate) at: &'static Location<'static>,
    pub(crate) tiles: [usize; 4],
}

/// The operations of one warpgroup that some of its warps have called and others not yet:
/// entry `k` is operation number `base + k`, with the warp that called it first.
#[derive(Debug, Default)]
struct Log {
    base: u64,
    steps: VecDeque<(Step, u32)>,
    done: [u64; WARPS],
}

/// One warp's groups and fences.
#[derive(Clone, Copy, Debug, Default)]
struct Warp {
    /// The group its next product joins.
    open: u32,
    /// Its groups below this one it has waited for.
    waited: u32,
    /// The fences it has passed.
    fences: u32,
}

/// The block's warpgroup products in flight, each warp's groups and fences, and each
/// warpgroup's log.
#[derive(Debug, Default)]
pub(crate) struct Warpgroups {
    flights: Vec<Flight>,
    warps: Vec<Warp>,
    logs: Vec<Log>,
}

impl Warpgroups {
    /// An empty record.
    pub(crate) const fn new() -> Warpgroups {
        Warpgroups {
            flights: Vec::new(),
            warps: Vec::new(),
            logs: Vec::new(),
        }
    }

    /// Forgets everything: a new block.
    pub(crate) fn clear(&mut self) {
        self.flights.clear();
        self.warps.clear();
        self.logs.clear();
    }

    /// The product in flight whose operands hold byte `slot`, if the write of `me` there races
    /// with its reads.
    #[inline]
    pub(crate) fn in_flight(&self, slot: usize, me: Who) -> Option<Flight> {
        self.flights.iter().find(|f| f.hit(slot, me)).copied()
    }

    /// Warp `warp` starts a product at `at` that reads the byte ranges `bytes`, in its open
    /// group. Products its warp waited for before the current barrier interval are forgotten.
    pub(crate) fn start(
        &mut self,
        warp: u32,
        interval: u32,
        bytes: impl IntoIterator<Item = (usize, usize)>,
        at: &'static Location<'static>,
    ) {
        self.flights
            .retain(|f| f.waited.is_none_or(|waited| waited == interval));
        let group = self.open_of(warp);
        let flight = |(start, end)| Flight {
            start,
            end,
            warp,
            group,
            waited: None,
            at,
        };
        self.flights.extend(bytes.into_iter().map(flight));
    }

    /// Warp `warp` commits its products since its last commit as a group.
    pub(crate) fn commit(&mut self, warp: u32) {
        self.warp(warp).open += 1;
    }

    /// Warp `warp` waits, in barrier interval `interval`, for all but its `latest` latest
    /// groups.
    pub(crate) fn wait(&mut self, warp: u32, latest: u32, interval: u32) {
        let w = self.warp(warp);
        let open = w.open;
        w.waited = w.waited.max(open.saturating_sub(latest));
        for f in self.flights.iter_mut() {
            if f.warp == warp && f.waited.is_none() && f.group + latest < open {
                f.waited = Some(interval);
            }
        }
    }

    /// The group that warp `warp`'s next product joins.
    pub(crate) fn open_of(&mut self, warp: u32) -> u32 {
        self.warp(warp).open
    }

    /// Warp `warp` passes a `wgmma::fence`.
    pub(crate) fn fence(&mut self, warp: u32) {
        self.warp(warp).fences += 1;
    }

    /// The fences warp `warp` has passed.
    pub(crate) fn fences_of(&mut self, warp: u32) -> u32 {
        self.warp(warp).fences
    }

    /// Whether warp `warp` has waited for its group `group`.
    pub(crate) fn waited_for(&mut self, warp: u32, group: u32) -> bool {
        group < self.warp(warp).waited
    }

    /// Warp `warp`'s record, from nothing on its first operation.
    fn warp(&mut self, warp: u32) -> &mut Warp {
        let w = warp as usize;
        if self.warps.len() <= w {
            self.warps.resize(w + 1, Warp::default());
        }
        &mut self.warps[w]
    }

    /// Warp `warp` calls `step`: where another warp of its warpgroup called a different
    /// operation at this point of their sequence, that one and its warp.
    pub(crate) fn step(&mut self, warp: u32, step: Step) -> Result<(), (Step, u32)> {
        let (g, i) = (warp as usize / WARPS, warp as usize % WARPS);
        if self.logs.len() <= g {
            self.logs.resize_with(g + 1, Log::default);
        }
        let log = &mut self.logs[g];
        let k = (log.done[i] - log.base) as usize;
        match log.steps.get(k) {
            Some(&(first, by)) if first != step => return Err((first, by)),
            Some(_) => {}
            None => log.steps.push_back((step, warp)),
        }
        log.done[i] += 1;
        while log.base < *log.done.iter().min().unwrap_or(&0) {
            log.steps.pop_front();
            log.base += 1;
        }
        Ok(())
    }

    /// At the block's end: an operation that some warps of a warpgroup called and another did
    /// not, with the warp that called it and the warp that did not.
    pub(crate) fn unfinished(&self) -> Option<(Step, u32, u32)> {
        self.logs.iter().enumerate().find_map(|(g, log)| {
            let (&(step, by), lagging) = (
                log.steps.front()?,
                log.done.iter().position(|&d| d == log.base)?,
            );
            Some((step, by, (g * WARPS + lagging) as u32))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(thread: u32, interval: u32) -> Who {
        Who {
            thread,
            interval,
            ..Who::default()
        }
    }

    #[test]
    fn an_operand_is_in_flight_until_its_warp_waits_and_a_barrier_follows() {
        let mut w = Warpgroups::new();
        let at = Location::caller();
        w.start(1, 0, [(64, 128)], at);
        w.commit(1);
        // Before the wait: any thread's write races, the warp's own too.
        assert!(w.in_flight(100, who(40, 0)).is_some());
        assert!(w.in_flight(100, who(0, 3)).is_some());
        assert!(w.in_flight(128, who(0, 0)).is_none());
        // Waiting for all but the latest group leaves it in flight.
        w.wait(1, 1, 0);
        assert!(w.in_flight(64, who(0, 0)).is_some());
        // Waited for in interval 2: the warp's own threads may write, others after a barrier.
        w.wait(1, 0, 2);
        assert!(w.in_flight(64, who(33, 2)).is_none());
        assert!(w.in_flight(64, who(0, 2)).is_some());
        assert!(w.in_flight(64, who(0, 3)).is_none());
        // A later product forgets it.
        w.start(1, 3, [], at);
        assert!(w.flights.is_empty());
        // The group of the first product was waited for; the open one not.
        assert!(w.waited_for(1, 0) && !w.waited_for(1, 1) && !w.waited_for(2, 0));
        // Fences are counted per warp.
        w.fence(1);
        assert_eq!((w.fences_of(1), w.fences_of(0)), (1, 0));
    }

    #[test]
    fn the_warps_of_a_warpgroup_call_the_same_operations() {
        let mut w = Warpgroups::new();
        let (a, b) = (Location::caller(), Location::caller());
        let step = |name, at| Step {
            name,
            at,
            tiles: [0; 4],
        };
        for warp in 0..4 {
            assert!(w.step(warp, step("fence", a)).is_ok());
        }
        assert!(w.logs[0].steps.is_empty(), "every warp has passed it");
        assert!(w.step(4, step("fence", a)).is_ok());
        assert!(w.step(5, step("fence", a)).is_ok());
        assert_eq!(w.step(6, step("commit", b)).unwrap_err().1, 4);
        // Warp 7 has not called the fence that warps 4 to 6 did.
        let (first, by, lagging) = w.unfinished().unwrap();
        assert_eq!((first.name, by, lagging), ("fence", 4, 6));
    }
}
