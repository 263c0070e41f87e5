//! The shadows of one checked launch: a lane per writable array for each worker that runs its
//! blocks, and, when every block has run, the comparison of the workers' lanes.
//!
//! Each worker records its blocks' accesses in lanes of its own, with no atomic operation: two
//! blocks of one worker meet in its lanes, where their race is found as it happens. Two blocks
//! of different workers meet when the launch ends: a page that the lanes of two workers both
//! touched is compared element by element, and an element that one worker wrote and another
//! wrote or read (unless both wrote atomically) is a race. Records of blocks are never ordered
//! with those of other blocks, so the last write and the read summary a lane holds of an
//! element stand for all of that worker's accesses to it.

use super::lane::{Held, Lane, Rec, Scope, PAGE_BITS};
use super::run::{run_checked, run_checked_cooperative, CheckedBlock};
use super::Trace;
use crate::base::AccessKind;
use crate::cpu::fault::{raise, KernelFault};
use crate::cpu::finding::Finding;
use crate::cpu::launch::LaunchSpec;
use crate::cpu::unwritten::Unwritten;
use std::cell::Cell;
use std::ops::Range;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Lanes kept for reuse: a checked launch takes one per writable array and worker and gives
/// them back, so that repeated launches do not fault in fresh memory.
static POOL: Mutex<Vec<Lane>> = Mutex::new(Vec::new());
const POOL_KEEP: usize = 64;

/// The block clock: every checked launch numbers its blocks from where the previous one's
/// numbers ended (0 is never a block's number).
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// Orders the groups of blocks that workers start, across launches.
static GROUPS: AtomicU64 = AtomicU64::new(0);

/// A writable array of the launch, for reports, and its elements that nothing had written
/// before it.
struct Array {
    name: &'static str,
    dims: Vec<usize>,
    unwritten: Unwritten,
}

/// One worker's lanes, one per writable array, and the groups of blocks it ran.
pub(crate) struct LaneSet {
    lanes: Vec<Lane>,
    /// The first block of each group the worker ran, and when the group started.
    groups: Mutex<Vec<(u64, u64)>>,
}

impl LaneSet {
    /// Lane `array` of this worker.
    #[inline(always)]
    pub(crate) fn lane(&self, array: usize) -> Option<&Lane> {
        self.lanes.get(array)
    }

    /// When the block of linear index `block` started, as an order
    /// across workers: its group's start, then its place in the group.
    fn started(&self, block: u64) -> (u64, u64) {
        let groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let (_, seq) = groups
            .iter()
            .filter(|(start, _)| *start <= block)
            .max_by_key(|(start, _)| *start)
            .copied()
            .unwrap_or((0, 0));
        (seq, block)
    }
}

thread_local! {
    /// The lane set of the checked launch this worker runs blocks of (null between groups).
    static CURRENT: Cell<*const LaneSet> = const { Cell::new(std::ptr::null()) };
    /// The lane set this worker claimed last, and its launch's first block on the clock, which
    /// names the launch (the set is gone once that launch has ended).
    static CLAIMED: Cell<(u64, *const LaneSet)> = const { Cell::new((0, std::ptr::null())) };
}

/// The first block, on the clock, of the checked launch this worker runs blocks of.
pub(crate) fn first_block() -> u32 {
    CLAIMED.with(|c| c.get().0 as u32)
}

/// This worker's lane set, or null outside a checked launch's group of blocks.
#[inline(always)]
pub(crate) fn current() -> *const LaneSet {
    CURRENT.with(|c| c.get())
}

/// The shadows of one checked launch's writable arrays, given back for reuse when it ends, and
/// the numbers of its blocks.
pub struct LaunchShadows {
    arrays: Vec<Array>,
    /// Boxed: workers keep pointers to their sets, which must not move as the list grows.
    #[allow(clippy::vec_box)]
    sets: Mutex<Vec<Box<LaneSet>>>,
    /// The launch's blocks on the clock.
    start: u64,
    blocks: u32,
    /// How many writable arrays [`written`](Self::written) has given back.
    returned: usize,
    /// The records of unwritten elements of the read-only views of parts of arrays, which
    /// their traces point into (each record's marks are boxed, so they do not move).
    windows: Vec<Unwritten>,
}

/// Restores the worker's previous lane set when a group of blocks ends.
pub(crate) struct Entered {
    previous: *const LaneSet,
}

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

impl LaunchShadows {
    /// The shadows of a launch of `spec`, numbering its blocks; a launch of 2³² - 1 blocks or
    /// more is refused.
    pub fn new(spec: &LaunchSpec) -> Result<LaunchShadows, KernelFault> {
        let volume = spec.grid.volume();
        if volume >= u32::MAX as u64 {
            return Err(KernelFault::Message(format!(
                "checked mode runs launches of fewer than {} blocks; this one has {volume}",
                u32::MAX
            )));
        }
        // A range of numbers that does not wrap modulo 2³² (so 0 stays "no block").
        let start = loop {
            let start = CLOCK.fetch_add(volume, Ordering::Relaxed);
            if start as u32 != 0 && (start as u32 as u64) + volume <= u32::MAX as u64 {
                break start;
            }
        };
        Ok(LaunchShadows {
            arrays: Vec::new(),
            windows: Vec::new(),
            sets: Mutex::new(Vec::new()),
            start,
            blocks: volume as u32,
            returned: 0,
        })
    }

    /// The trace of the writable array `name` of shape `dims`, whose elements `unwritten`
    /// nothing had written before the launch: a read of one that no write of the launch came
    /// before is reported, and [`written`](Self::written) gives back what is left of them.
    pub(crate) fn writable(
        &mut self,
        name: &'static str,
        dims: &[usize],
        unwritten: Unwritten,
    ) -> Trace {
        self.arrays.push(Array {
            name,
            dims: dims.to_vec(),
            unwritten,
        });
        Trace::global(self.arrays.len() - 1)
    }

    /// Once the launch has run, the elements of its next writable array (in the order of
    /// [`writable`](Self::writable)) that nothing has written, the launch's writes cleared.
    pub(crate) fn written(&mut self) -> Unwritten {
        let k = self.returned;
        self.returned += 1;
        let Some(array) = self.arrays.get_mut(k) else {
            return Unwritten::default();
        };
        let mut unwritten = std::mem::take(&mut array.unwritten);
        if unwritten.marks().is_some() {
            let sets = self.sets.get_mut().unwrap_or_else(|e| e.into_inner());
            for set in sets.iter() {
                set.lanes[k].clear_written(&mut unwritten);
            }
        }
        unwritten
    }

    /// The trace of a read-only array: its indices are checked, and its reads of elements
    /// nothing has written (`unwritten`) reported; its accesses are not recorded.
    pub(crate) fn read_only(&self, unwritten: &Unwritten) -> Trace {
        match unwritten.marks() {
            Some(marks) => Trace::unwritten(marks),
            None => Trace::READ_ONLY,
        }
    }

    /// As [`read_only`](Self::read_only), for a view of part of an array whose record of
    /// unwritten elements, numbered from the view's first, is `window`: the shadows keep it
    /// for the launch.
    pub(crate) fn read_only_window(&mut self, window: Unwritten) -> Trace {
        self.windows.push(window);
        let kept = self.windows.last().expect("just pushed");
        self.read_only(kept)
    }

    /// The number of the launch's first block.
    pub(crate) fn first(&self) -> u32 {
        self.start as u32
    }

    /// Makes this worker's lane set current for a group of blocks starting at block `group`
    /// (linear index), claiming a set when the worker first runs blocks of this launch.
    pub(crate) fn enter(&self, group: u64) -> Entered {
        let previous = CURRENT.with(|c| c.get());
        let set = match CLAIMED.with(|c| c.get()) {
            (launch, set) if launch == self.start => set,
            _ => {
                let set = self.claim();
                CLAIMED.with(|c| c.set((self.start, set)));
                set
            }
        };
        let seq = GROUPS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `set` is one of this launch's boxed sets, which live until it is dropped.
        unsafe { &*set }
            .groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((group, seq));
        CURRENT.with(|c| c.set(set));
        Entered { previous }
    }

    /// A new lane set for the calling worker.
    fn claim(&self) -> *const LaneSet {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let lanes: Result<Vec<Lane>, String> = self
            .arrays
            .iter()
            .map(|a| {
                let mut lane = pool.pop().unwrap_or_else(|| Lane::new(Scope::Global));
                let len = a.dims.iter().product();
                match lane.for_launch(len, self.start, self.first(), self.blocks) {
                    Ok(()) => {
                        lane.set_marks(a.unwritten.marks());
                        Ok(lane)
                    }
                    Err(e) => Err(format!(
                        "{e} for array `{}`: check a smaller array, or run on Device::cpu()",
                        a.name
                    )),
                }
            })
            .collect();
        drop(pool);
        let lanes = lanes.unwrap_or_else(|message| raise(message));
        let set = Box::new(LaneSet {
            lanes,
            groups: Mutex::new(Vec::new()),
        });
        let ptr: *const LaneSet = &*set;
        self.sets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(set);
        ptr
    }

    /// Runs the launch in checked mode (see `run::run_checked`), then compares what the
    /// workers recorded; a `cooperative` launch's blocks run on one worker (see
    /// `run::run_checked_cooperative`), so there is no other worker's lane to compare.
    pub(crate) fn run(
        &self,
        spec: &LaunchSpec,
        cooperative: bool,
        body: CheckedBlock<'_>,
    ) -> Result<(), KernelFault> {
        if let (true, CheckedBlock::Meeting(body)) = (cooperative, body) {
            return run_checked_cooperative(spec, self, body);
        }
        run_checked(spec, self, body)?;
        self.compare(spec)
    }

    /// Compares what the workers recorded once every block has run: the first race between
    /// blocks of different workers.
    pub(crate) fn compare(&self, spec: &LaunchSpec) -> Result<(), KernelFault> {
        match self.compare_workers(spec) {
            Some(finding) => Err(KernelFault::Finding(Box::new(finding))),
            None => Ok(()),
        }
    }

    /// The first race between blocks of different workers, element by element in the pages
    /// that two workers touched.
    fn compare_workers(&self, spec: &LaunchSpec) -> Option<Finding> {
        let sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        if sets.len() < 2 {
            return None;
        }
        for (k, array) in self.arrays.iter().enumerate() {
            let len: usize = array.dims.iter().product();
            for page in 0..len.div_ceil(1 << PAGE_BITS) {
                let touched = || sets.iter().filter(|s| s.lanes[k].touched(page));
                if touched().nth(1).is_none() {
                    continue;
                }
                let touched: Vec<&LaneSet> = touched().map(|s| &**s).collect();
                let slots = page << PAGE_BITS..((page + 1) << PAGE_BITS).min(len);
                if let Some(f) = self.compare_page(spec, array, k, &touched, slots) {
                    return Some(f);
                }
            }
        }
        None
    }

    /// The first race in `slots` of array `k` between the workers of `sets`: a write of one
    /// and a write (unless both are atomics) or a read of another.
    fn compare_page(
        &self,
        spec: &LaunchSpec,
        array: &Array,
        k: usize,
        sets: &[&LaneSet],
        slots: Range<usize>,
    ) -> Option<Finding> {
        for slot in slots {
            let held: Vec<Held> = sets.iter().map(|s| s.lanes[k].held(slot)).collect();
            for (a, ha) in held.iter().enumerate() {
                let Some((wa, at_a)) = ha.write else { continue };
                let one = (sets[a], wa, wa.write_kind(), at_a);
                for (b, hb) in held.iter().enumerate().filter(|(b, _)| *b != a) {
                    if let Some((wb, at_b)) =
                        hb.write.filter(|(wb, _)| b > a && wa.writes_race(*wb))
                    {
                        let two = (sets[b], wb, wb.write_kind(), at_b);
                        return Some(self.race(spec, array, slot, one, two));
                    }
                    if let Some((rb, at_b)) = hb.read {
                        let two = (sets[b], rb, AccessKind::Read, at_b);
                        return Some(self.race(spec, array, slot, one, two));
                    }
                }
            }
        }
        None
    }

    /// The race between two workers' accesses to `slot`, the one whose block started first
    /// named first.
    fn race(
        &self,
        spec: &LaunchSpec,
        array: &Array,
        slot: usize,
        one: Recorded<'_>,
        two: Recorded<'_>,
    ) -> Finding {
        let key = |(set, rec, _, _): &Recorded<'_>| set.started(rec.block_index(self.first()));
        let (first, second) = if key(&one) <= key(&two) {
            (one, two)
        } else {
            (two, one)
        };
        let access = |(_, rec, kind, at): Recorded<'_>| {
            rec.access(kind, at, self.first(), spec.grid, spec.block)
        };
        Finding::DataRace {
            array: array.name,
            index: unflatten(slot, &array.dims),
            first: access(first),
            second: access(second),
        }
    }
}

/// An access a worker's lane recorded: the worker, the record, its kind and line.
type Recorded<'a> = (
    &'a LaneSet,
    Rec,
    AccessKind,
    Option<&'static Location<'static>>,
);

/// The index of element `offset` of an array of shape `dims` (C order).
pub(crate) fn unflatten(offset: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    let mut rest = offset;
    for (i, d) in index.iter_mut().zip(dims).rev() {
        *i = rest % (*d).max(1);
        rest /= (*d).max(1);
    }
    index
}

impl Drop for LaunchShadows {
    fn drop(&mut self) {
        let sets = std::mem::take(self.sets.get_mut().unwrap_or_else(|e| e.into_inner()));
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        for mut lane in sets.into_iter().flat_map(|s| s.lanes) {
            if pool.len() < POOL_KEEP {
                lane.set_marks(None);
                pool.push(lane);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::check::{record, set_who, Target, Who};
    use crate::dim::Dim3;

    fn spec(blocks: u32) -> LaunchSpec {
        LaunchSpec {
            kernel: "k",
            grid: Dim3::new(blocks, 1, 1),
            block: Dim3::new(4, 1, 1),
            shared_bytes: 0,
            barriers: false,
            thread_context: true,
            grid_level: false,
        }
    }

    /// Runs `accesses` (block, thread, element, kind), each block on a worker of its own, and
    /// compares the workers.
    fn run(accesses: &[(u32, u32, usize, AccessKind)]) -> Option<Finding> {
        let spec = spec(4);
        let mut shadows = LaunchShadows::new(&spec).unwrap();
        assert_eq!(
            shadows
                .writable("out", &[2, 4], Unwritten::default())
                .target,
            Target::Global(0)
        );
        let shadows = &shadows;
        for b in 0..4u32 {
            std::thread::scope(|s| {
                s.spawn(move || {
                    let _entered = shadows.enter(b as u64);
                    for &(block, thread, element, kind) in accesses.iter().filter(|a| a.0 == b) {
                        set_who(Who {
                            block: shadows.first() + block,
                            interval: 0,
                            thread,
                            epoch: 0,
                            phase: 0,
                        });
                        let trace = Trace::global(0);
                        assert!(!record(&trace, element, kind), "one worker's blocks race");
                    }
                });
            });
        }
        shadows.compare_workers(&spec)
    }

    use AccessKind::{Atomic, Read, Write};

    #[test]
    fn blocks_of_different_workers_race_when_the_launch_ends() {
        // Blocks 1 and 2 write element (1, 1), each on a worker of its own; block 1 runs first.
        let Some(Finding::DataRace {
            array,
            index,
            first,
            second,
        }) = run(&[(2, 3, 5, Write), (1, 0, 5, Write)])
        else {
            panic!("no race")
        };
        assert_eq!((array, index), ("out", vec![1, 1]));
        assert_eq!(
            (first.block.x, first.thread.x, first.kind),
            (1, 0, Write),
            "the block whose worker started first comes first"
        );
        assert_eq!(
            (second.block.x, second.thread.x, second.kind),
            (2, 3, Write)
        );
        assert!(second.at.is_some_and(|at| at.file().ends_with("launch.rs")));
        // A write and a read, an atomic and a read.
        assert!(run(&[(0, 0, 7, Read), (3, 1, 7, Write)]).is_some());
        assert!(run(&[(0, 0, 7, Atomic), (3, 1, 7, Read)]).is_some());
    }

    #[test]
    fn workers_without_a_conflict_pass() {
        // Other elements of one page, reads of one element, atomics of one element.
        assert_eq!(
            run(&[(0, 0, 0, Write), (1, 0, 1, Write), (2, 0, 2, Read)]),
            None
        );
        assert_eq!(run(&[(0, 0, 3, Read), (1, 2, 3, Read)]), None);
        assert_eq!(
            run(&[(0, 0, 4, Atomic), (1, 1, 4, Atomic), (2, 0, 4, Atomic)]),
            None
        );
    }
}
