//! Checked mode's shadow memory: who last wrote and read each element of a writable array or of
//! the block's shared memory, from which data races and reads of shared memory never written
//! are found as they happen.
//!
//! Read-only array parameters need no shadow: the borrow checker keeps an array from being
//! passed both as `&` and `&mut`, so no thread of the launch writes them.
//!
//! Two accesses to one element by different threads race unless one is ordered before the
//! other, or both are atomics. Within a launch, the only order is a block's barriers: accesses
//! of different blocks never are ordered, accesses of one block are ordered when a barrier lies
//! between them. A thread's record is its block (linear index), the block's barrier interval
//! (how many barriers the block has passed) and its thread (linear index in the block). Each
//! element keeps its last write and a summary of its reads, in one word each:
//!
//! - the last write, with flags for atomic writes by several threads of one interval or by
//!   several blocks (each such pair is not a race, but a later plain access races with them);
//! - the latest read, with flags for reads by several threads of its interval and by several
//!   blocks, and a witness of each kept beside the word for the report.
//!
//! A launch stops at its first race, so the records only ever describe race-free histories:
//! this is what lets one word stand for all earlier accesses.
//!
//! Blocks run in parallel, so the words of global arrays are updated with atomic operations:
//! each access publishes its record first and then reads the other word, so that of a read and a
//! write of two concurrent blocks at least one sees the other.
//!
//! Shadows are reused from launch to launch without clearing: blocks are numbered by a clock
//! that runs on across launches, so a record of an earlier launch has a block number outside
//! the current launch's range (a shadow is cleared once in 2³² blocks, before numbers repeat).

use super::exec::LaunchSpec;
use super::fault::{raise_finding, KernelFault};
use super::finding::{Access, AccessKind, Finding};
use super::tls;
use std::cell::Cell as StdCell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The running simulated thread of a checked launch, as the shadow records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Who {
    /// The block's linear index plus one (zero: no checked thread runs).
    pub(crate) block: u32,
    /// How many barriers the block has passed.
    pub(crate) interval: u32,
    /// The thread's linear index in its block.
    pub(crate) thread: u32,
}

/// The most barriers one block may pass in a checked launch.
pub(crate) const MAX_INTERVAL: u32 = (1 << INTERVAL_BITS) - 1;

thread_local! {
    static WHO: StdCell<Who> = const { StdCell::new(Who { block: 0, interval: 0, thread: 0 }) };
}

/// Makes `who` the running checked thread of this OS thread.
#[inline]
pub(crate) fn set_who(who: Who) {
    WHO.with(|c| c.set(who));
}

/// The running checked thread.
#[inline]
pub(crate) fn who() -> Who {
    WHO.with(|c| c.get())
}

const INTERVAL_BITS: u32 = 19;
const THREAD_BITS: u32 = 10;
/// A write record: the write was an atomic operation.
const ATOMIC: u64 = 1 << 61;
/// Several threads of the record's block and interval did this (atomics, or reads).
const MANY_THREADS: u64 = 1 << 62;
/// Several blocks did this (atomics, or reads).
const MANY_BLOCKS: u64 = 1 << 63;

/// One access record packed in a word: block (32 bits), interval (19), thread (10), flags (3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec(u64);

impl Rec {
    fn of(who: Who) -> Rec {
        debug_assert!(who.interval <= MAX_INTERVAL && who.thread < (1 << THREAD_BITS));
        Rec(who.block as u64
            | (who.interval as u64) << 32
            | (who.thread as u64) << (32 + INTERVAL_BITS))
    }
    pub(crate) fn block(self) -> u32 {
        self.0 as u32
    }
    fn interval(self) -> u32 {
        (self.0 >> 32) as u32 & MAX_INTERVAL
    }
    pub(crate) fn thread(self) -> u32 {
        (self.0 >> (32 + INTERVAL_BITS)) as u32 & ((1 << THREAD_BITS) - 1)
    }
    fn has(self, flag: u64) -> bool {
        self.0 & flag != 0
    }
    fn with(self, flag: u64, on: bool) -> Rec {
        if on {
            Rec(self.0 | flag)
        } else {
            self
        }
    }
    /// Whether the thread of this record is not ordered with `me`: another block, or another
    /// thread of `me`'s block in the same barrier interval.
    fn unordered_with(self, me: Who) -> bool {
        self.block() != me.block || (self.interval() == me.interval && self.thread() != me.thread)
    }
    /// Whether some access this record stands for is not ordered with `me`.
    fn any_unordered_with(self, me: Who) -> bool {
        self.has(MANY_BLOCKS)
            || self.unordered_with(me)
            || (self.has(MANY_THREADS)
                && self.block() == me.block
                && self.interval() == me.interval)
    }
}

/// Where an array's shadow lives: a writable array of the launch, or the block's shared memory
/// (one shadow per worker, cleared for each block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Global,
    Shared,
}

/// The readers a read summary's flags stand for, for reports (rarely touched).
#[derive(Default)]
struct Witness {
    /// A second reader of the latest read's interval.
    other_thread: AtomicU64,
    other_thread_at: AtomicU32,
    /// A reader of another block than the latest read's.
    other_block: AtomicU64,
    other_block_at: AtomicU32,
}

/// The shadow of one array (or of a block's shared memory, one slot per byte): per element,
/// the last write and the read summary, and the source lines of each (for reports), in arrays
/// of their own, so that a write to an array nobody reads touches 12 bytes of shadow.
pub struct Shadow {
    scope: Scope,
    writes: Vec<AtomicU64>,
    reads: Vec<AtomicU64>,
    write_at: Vec<AtomicU32>,
    read_at: Vec<AtomicU32>,
    witnesses: Vec<Witness>,
    /// Whether a thread of this launch has read the array (else writes skip the read summary).
    any_reads: AtomicBool,
    /// The number of the launch's first block: records of this launch have block numbers
    /// `first .. first + blocks`.
    first: u32,
    blocks: u32,
    /// The block clock when the shadow was last cleared.
    cleared_at: u64,
}

/// An element's slots in a shadow's arrays.
struct Slot<'a> {
    w: &'a AtomicU64,
    r: &'a AtomicU64,
    write_at: &'a AtomicU32,
    read_at: &'a AtomicU32,
    witness: &'a Witness,
}

/// The earlier access of a race, as the shadow recorded it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Earlier {
    pub(crate) rec: Rec,
    pub(crate) kind: AccessKind,
    pub(crate) at: Option<&'static Location<'static>>,
}

/// What an access found wrong.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conflict {
    /// It is not ordered with this earlier access to the element.
    Race(Earlier),
    /// It reads shared memory that no thread of the block has written.
    Uninitialized,
}

/// A fixed address in the program: source lines are kept as 32-bit distances from it.
static ANCHOR: u8 = 0;

/// `at` as its distance from [`ANCHOR`], or 0 (unknown) when that does not fit in 32 bits, as
/// for a kernel in a library loaded far away.
fn encode(at: &'static Location<'static>) -> u32 {
    let d = (at as *const Location<'static> as isize).wrapping_sub(&ANCHOR as *const u8 as isize);
    i32::try_from(d).map_or(0, |d| d as u32)
}

fn location(p: &AtomicU32) -> Option<&'static Location<'static>> {
    match p.load(Ordering::Relaxed) {
        0 => None,
        d => {
            let addr = (&ANCHOR as *const u8 as isize).wrapping_add(d as i32 as isize);
            // SAFETY: only `encode`d addresses of `&'static Location`s (or 0) are stored.
            Some(unsafe { &*(addr as *const Location<'static>) })
        }
    }
}

fn store_location(p: &AtomicU32, at: &'static Location<'static>) {
    p.store(encode(at), Ordering::Relaxed);
}

/// Shadows kept for reuse: a checked launch takes one per writable array and gives it back,
/// so that repeated launches do not fault in fresh memory.
static POOL: Mutex<Vec<Shadow>> = Mutex::new(Vec::new());
const POOL_KEEP: usize = 16;

/// The block clock: every checked launch numbers its blocks from where the previous one's
/// numbers ended (0 is never a block's number).
static CLOCK: AtomicU64 = AtomicU64::new(1);

impl Shadow {
    const fn new(scope: Scope) -> Shadow {
        Shadow {
            scope,
            writes: Vec::new(),
            reads: Vec::new(),
            write_at: Vec::new(),
            read_at: Vec::new(),
            witnesses: Vec::new(),
            any_reads: AtomicBool::new(false),
            first: 0,
            blocks: 0,
            cleared_at: 0,
        }
    }

    /// Makes room for `len` elements.
    fn grow(&mut self, len: usize) {
        if self.writes.len() < len {
            self.writes.resize_with(len, Default::default);
            self.reads.resize_with(len, Default::default);
            self.write_at.resize_with(len, Default::default);
            self.read_at.resize_with(len, Default::default);
            self.witnesses.resize_with(len, Default::default);
        }
    }

    /// Clears the records of the first `len` elements.
    fn clear(&mut self, len: usize) {
        self.writes[..len]
            .iter_mut()
            .for_each(|w| *w = AtomicU64::new(0));
        self.reads[..len]
            .iter_mut()
            .for_each(|r| *r = AtomicU64::new(0));
    }

    /// A shadow of `len` elements of a writable array for the launch whose blocks are numbered
    /// `first ..` (`start` on the clock), with no record of this launch.
    fn global(len: usize, start: u64, first: u32, blocks: u32) -> Shadow {
        let mut s = POOL
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| Shadow::new(Scope::Global));
        s.grow(len);
        // Block numbers are the clock modulo 2³²: clear before an old record's number could come
        // round again.
        if start + blocks as u64 - s.cleared_at >= 1 << 32 {
            let all = s.writes.len();
            s.clear(all);
            s.cleared_at = start;
        }
        s.any_reads = AtomicBool::new(false);
        s.first = first;
        s.blocks = blocks;
        s
    }

    /// An empty shadow of a block's shared memory (one slot per byte).
    pub(crate) const fn shared() -> Shadow {
        Shadow::new(Scope::Shared)
    }

    /// Clears the first `len` slots of a block's shared memory shadow, for a block of the launch
    /// whose first block is numbered `first`.
    pub(crate) fn reset_shared(&mut self, len: usize, first: u32) {
        self.grow(len);
        self.clear(len);
        self.any_reads = AtomicBool::new(true);
        self.first = first;
    }

    /// Gives a global shadow back for reuse.
    fn recycle(self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_KEEP {
            pool.push(self);
        }
    }

    /// Records an access of the running thread to slot `slot`; says what is wrong with it.
    #[inline]
    pub(crate) fn access(
        &self,
        slot: usize,
        kind: AccessKind,
        at: &'static Location<'static>,
    ) -> Result<(), Conflict> {
        let me = who();
        if slot >= self.writes.len() {
            // Not reached: views only record slots inside their array.
            return Ok(());
        }
        let side = Slot {
            w: &self.writes[slot],
            r: &self.reads[slot],
            write_at: &self.write_at[slot],
            read_at: &self.read_at[slot],
            witness: &self.witnesses[slot],
        };
        let (w, r) = (side.w, side.r);
        // Shared memory starts each block unwritten: a read needs a write of this block first.
        if self.scope == Scope::Shared
            && kind != AccessKind::Write
            && !self.present(Rec(w.load(Ordering::Relaxed)), me)
        {
            return Err(Conflict::Uninitialized);
        }
        match kind {
            AccessKind::Read => self.read(w, r, side, me, at),
            _ => self.write(w, r, side, me, kind, at),
        }
    }

    /// A plain read: publish it in the read summary, then check the last write.
    #[inline]
    fn read(
        &self,
        w: &AtomicU64,
        r: &AtomicU64,
        side: Slot<'_>,
        me: Who,
        at: &'static Location<'static>,
    ) -> Result<(), Conflict> {
        // Writes look at the read summaries once a read has said so (before its record).
        if !self.any_reads.load(Ordering::Relaxed) {
            self.any_reads.store(true, Ordering::SeqCst);
        }
        let mut old = Rec(r.load(Ordering::Relaxed));
        loop {
            let new = self.merge_read(old, me);
            if new == old {
                break;
            }
            match self.publish(r, old, new) {
                Ok(()) => {
                    self.note_read(old, new, me, &side, at);
                    break;
                }
                Err(now) => old = now,
            }
        }
        let last = Rec(w.load(Ordering::SeqCst));
        if self.present(last, me) && last.any_unordered_with(me) {
            return Err(Conflict::Race(Earlier {
                rec: last,
                kind: write_kind(last),
                at: location(side.write_at),
            }));
        }
        Ok(())
    }

    /// A plain write or an atomic operation: publish it as the last write, then check the
    /// earlier write and the reads.
    #[inline]
    fn write(
        &self,
        w: &AtomicU64,
        r: &AtomicU64,
        side: Slot<'_>,
        me: Who,
        kind: AccessKind,
        at: &'static Location<'static>,
    ) -> Result<(), Conflict> {
        let atomic = kind == AccessKind::Atomic;
        let mut last = Rec(w.load(Ordering::Relaxed));
        loop {
            let present = self.present(last, me);
            let both_atomic = present && atomic && last.has(ATOMIC);
            let new = Rec::of(me)
                .with(ATOMIC, atomic)
                .with(
                    MANY_BLOCKS,
                    both_atomic && (last.has(MANY_BLOCKS) || last.block() != me.block),
                )
                .with(
                    MANY_THREADS,
                    both_atomic
                        && last.block() == me.block
                        && last.interval() == me.interval
                        && (last.has(MANY_THREADS) || last.thread() != me.thread),
                );
            match self.publish(w, last, new) {
                Ok(()) => break,
                Err(now) => last = now,
            }
        }
        // The line goes in after the record: a store before the atomic update would have to
        // reach memory first. (A thread of another block that sees the record at that moment
        // may report the element's previous line.)
        let earlier_at = location(side.write_at);
        store_location(side.write_at, at);
        if self.present(last, me) && !(atomic && last.has(ATOMIC)) && last.any_unordered_with(me) {
            return Err(Conflict::Race(Earlier {
                rec: last,
                kind: write_kind(last),
                at: earlier_at,
            }));
        }
        if !self.any_reads.load(Ordering::SeqCst) {
            return Ok(());
        }
        let reads = Rec(r.load(Ordering::SeqCst));
        if self.present(reads, me) && reads.any_unordered_with(me) {
            // Name a reader that is not ordered with this write.
            let (rec, at) = if reads.unordered_with(me) {
                (reads, location(side.read_at))
            } else if reads.has(MANY_BLOCKS) && reads.block() == me.block {
                (
                    Rec(side.witness.other_block.load(Ordering::Relaxed)),
                    location(&side.witness.other_block_at),
                )
            } else {
                (
                    Rec(side.witness.other_thread.load(Ordering::Relaxed)),
                    location(&side.witness.other_thread_at),
                )
            };
            return Err(Conflict::Race(Earlier {
                rec,
                kind: AccessKind::Read,
                at,
            }));
        }
        Ok(())
    }

    /// Whether `rec` records an access of this launch (of this block, for shared memory).
    #[inline(always)]
    fn present(&self, rec: Rec, me: Who) -> bool {
        match self.scope {
            Scope::Global => rec.block().wrapping_sub(self.first) < self.blocks,
            Scope::Shared => rec.block() == me.block,
        }
    }

    /// The read summary after `me` reads.
    #[inline(always)]
    fn merge_read(&self, old: Rec, me: Who) -> Rec {
        let mine = Rec::of(me);
        if !self.present(old, me) {
            mine
        } else if old.block() != me.block {
            mine.with(MANY_BLOCKS, true)
        } else if old.interval() != me.interval {
            mine.with(MANY_BLOCKS, old.has(MANY_BLOCKS))
        } else if old.thread() != me.thread && !old.has(MANY_THREADS) {
            old.with(MANY_THREADS, true)
        } else {
            old
        }
    }

    /// Keeps the witnesses of a read summary that changed from `old` to `new`.
    fn note_read(
        &self,
        old: Rec,
        new: Rec,
        me: Who,
        side: &Slot<'_>,
        at: &'static Location<'static>,
    ) {
        if new.has(MANY_THREADS) && !old.has(MANY_THREADS) {
            side.witness
                .other_thread
                .store(Rec::of(me).0, Ordering::Relaxed);
            store_location(&side.witness.other_thread_at, at);
            return;
        }
        if self.present(old, me) && old.block() != me.block {
            side.witness.other_block.store(old.0, Ordering::Relaxed);
            side.witness
                .other_block_at
                .store(side.read_at.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        store_location(side.read_at, at);
    }

    /// Replaces `old` with `new` in `word`: atomically for arrays that blocks share, plainly
    /// for the shared memory of the block that runs on this worker.
    #[inline(always)]
    fn publish(&self, word: &AtomicU64, old: Rec, new: Rec) -> Result<(), Rec> {
        match self.scope {
            Scope::Global => word
                .compare_exchange(old.0, new.0, Ordering::SeqCst, Ordering::Relaxed)
                .map(drop)
                .map_err(Rec),
            Scope::Shared => {
                word.store(new.0, Ordering::Relaxed);
                Ok(())
            }
        }
    }
}

fn write_kind(rec: Rec) -> AccessKind {
    if rec.has(ATOMIC) {
        AccessKind::Atomic
    } else {
        AccessKind::Write
    }
}

/// How a view finds its shadow: `None` outside checked mode; else the shadow and the slot of
/// the view's first element and the slots between consecutive elements (1 for an array, the
/// element's size for shared memory, whose shadow has a slot per byte).
#[derive(Clone, Copy, Debug)]
pub struct Trace {
    pub(crate) shadow: *const Shadow,
    pub(crate) base: usize,
    pub(crate) stride: usize,
}

impl Trace {
    /// No checking: the fast CPU backend.
    pub const OFF: Trace = Trace {
        shadow: std::ptr::null(),
        base: 0,
        stride: 1,
    };

    /// Whether accesses are checked.
    #[inline(always)]
    pub fn on(&self) -> bool {
        !self.shadow.is_null()
    }

    /// The trace of a shared array `offset` bytes into the block's shared memory.
    #[inline(always)]
    pub(crate) fn shared(shadow: *const Shadow, offset: usize, elem: usize) -> Trace {
        Trace {
            shadow,
            base: offset,
            stride: elem.max(1),
        }
    }
}

/// A shadow that is on but records nothing: the trace of read-only arrays in checked mode,
/// whose indices are checked but whose accesses cannot race.
pub(crate) static READ_ONLY: Shadow = Shadow::new(Scope::Global);

/// Records an access through a view to its element at `offset`; stops the kernel with the
/// finding when the access races or reads uninitialized shared memory.
///
/// The fast backend's views are never traced, and its kernels rebind them untraced, so that
/// this test folds away there; the recording itself is a call of its own (inlining it into
/// every access of the checked body measured slower).
#[inline(never)]
#[track_caller]
pub fn record(trace: &Trace, offset: usize, kind: AccessKind, array: &'static str, dims: &[usize]) {
    // SAFETY: a trace that is on points at a shadow that outlives the launch (`__traced`).
    let shadow = unsafe { &*trace.shadow };
    let at = Location::caller();
    if let Err(conflict) = shadow.access(trace.base + offset * trace.stride, kind, at) {
        report(conflict, shadow.first, kind, at, array, offset, dims)
    }
}

/// The running thread's access, for a report.
pub(crate) fn current_access(kind: AccessKind, at: Option<&'static Location<'static>>) -> Access {
    Access {
        kind,
        block: tls::block().block,
        thread: tls::thread(),
        at,
    }
}

#[cold]
#[inline(never)]
fn report(
    conflict: Conflict,
    first_block: u32,
    kind: AccessKind,
    at: &'static Location<'static>,
    array: &'static str,
    offset: usize,
    dims: &[usize],
) -> ! {
    let mut index = vec![0; dims.len()];
    let mut rest = offset;
    for (i, d) in index.iter_mut().zip(dims).rev() {
        *i = rest % (*d).max(1);
        rest /= (*d).max(1);
    }
    let access = current_access(kind, Some(at));
    raise_finding(match conflict {
        Conflict::Uninitialized => Finding::UninitializedSharedRead {
            array,
            index,
            access,
        },
        Conflict::Race(earlier) => {
            let state = tls::block();
            Finding::DataRace {
                array,
                index,
                first: Access {
                    kind: earlier.kind,
                    block: state
                        .grid_dim
                        .unflatten(earlier.rec.block().wrapping_sub(first_block) as u64),
                    thread: state.block_dim.unflatten(earlier.rec.thread() as u64),
                    at: earlier.at,
                },
                second: access,
            }
        }
    })
}

/// The shadows of one checked launch's writable arrays, given back for reuse when it ends, and
/// the numbers of its blocks.
pub struct LaunchShadows {
    /// Boxed: the traces point at the shadows, which must not move as the list grows.
    #[allow(clippy::vec_box)]
    shadows: Vec<Box<Shadow>>,
    /// The launch's blocks on the clock.
    start: u64,
    blocks: u32,
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
            shadows: Vec::new(),
            start,
            blocks: volume as u32,
        })
    }

    /// The trace of a writable array of `len` elements: a shadow with no record of this launch.
    pub fn writable(&mut self, len: usize) -> Trace {
        let shadow = Box::new(Shadow::global(len, self.start, self.first(), self.blocks));
        let trace = Trace {
            shadow: &*shadow,
            base: 0,
            stride: 1,
        };
        self.shadows.push(shadow);
        trace
    }

    /// The trace of a read-only array: its indices are checked, its accesses not recorded.
    pub fn read_only(&self) -> Trace {
        Trace {
            shadow: &READ_ONLY,
            base: 0,
            stride: 1,
        }
    }

    /// The number of the launch's first block.
    fn first(&self) -> u32 {
        self.start as u32
    }

    /// Runs the launch in checked mode (see [`run_checked`](super::exec::run_checked)).
    pub fn run<F>(&self, spec: &LaunchSpec, body: F) -> Result<(), KernelFault>
    where
        F: Fn(crate::ctx::Ctx) + Sync + Clone,
    {
        super::exec::run_checked(spec, self.first(), body)
    }
}

impl Drop for LaunchShadows {
    fn drop(&mut self) {
        for s in self.shadows.drain(..) {
            (*s).recycle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> &'static Location<'static> {
        Location::caller()
    }

    fn run(shadow: &Shadow, who: Who, kind: AccessKind) -> Result<(), Conflict> {
        set_who(who);
        shadow.access(0, kind, at())
    }

    const fn t(block: u32, interval: u32, thread: u32) -> Who {
        Who {
            block,
            interval,
            thread,
        }
    }

    use AccessKind::{Atomic, Read, Write};

    #[test]
    fn records_of_other_launches_are_not_this_ones() {
        // Launch 1 (blocks 1..=8) writes; launch 2 (blocks 9..=16) reuses the shadow.
        let s = Shadow::global(1, 1, 1, 8);
        run(&s, t(1, 0, 0), Write).unwrap();
        let mut s = s;
        (s.first, s.blocks) = (9, 8);
        run(&s, t(9, 0, 1), Write).unwrap();
        run(&s, t(10, 0, 0), Read).unwrap_err();
    }

    #[test]
    fn records_round_trip() {
        let r = Rec::of(t(7, MAX_INTERVAL, 1023)).with(MANY_BLOCKS, true);
        assert_eq!(
            (r.block(), r.interval(), r.thread()),
            (7, MAX_INTERVAL, 1023)
        );
        assert!(r.has(MANY_BLOCKS) && !r.has(ATOMIC) && !r.has(MANY_THREADS));
    }

    #[test]
    fn ordered_accesses_pass() {
        let s = Shadow::global(1, 1, 1, 8);
        // One thread, then the next interval's threads.
        run(&s, t(1, 0, 3), Write).unwrap();
        run(&s, t(1, 0, 3), Read).unwrap();
        run(&s, t(1, 1, 4), Read).unwrap();
        run(&s, t(1, 1, 5), Read).unwrap();
        run(&s, t(1, 2, 6), Write).unwrap();
        // Atomics of many threads and blocks, then a plain read after a barrier is a race only
        // when other blocks took part.
        let s = Shadow::global(1, 1, 1, 8);
        run(&s, t(1, 0, 0), Atomic).unwrap();
        run(&s, t(1, 0, 1), Atomic).unwrap();
        run(&s, t(1, 1, 2), Read).unwrap();
        run(&s, t(2, 0, 0), Atomic).unwrap_err();
    }

    #[test]
    fn unordered_accesses_race() {
        for (a, b) in [
            ((t(1, 0, 0), Write), (t(1, 0, 1), Write)),
            ((t(1, 0, 0), Write), (t(1, 0, 1), Read)),
            ((t(1, 0, 0), Read), (t(1, 0, 1), Write)),
            ((t(1, 0, 0), Write), (t(2, 5, 0), Read)),
            ((t(2, 3, 0), Read), (t(1, 0, 0), Atomic)),
            ((t(1, 0, 0), Atomic), (t(1, 0, 1), Read)),
        ] {
            let s = Shadow::global(1, 1, 1, 8);
            run(&s, a.0, a.1).unwrap();
            match run(&s, b.0, b.1) {
                Err(Conflict::Race(e)) => {
                    assert_eq!(
                        (e.rec.block(), e.rec.thread(), e.kind),
                        (a.0.block, a.0.thread, a.1)
                    )
                }
                other => panic!("{a:?} then {b:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn summaries_keep_a_witness_that_is_not_ordered() {
        // Two readers of one interval, then one of them writes: the other is named.
        let s = Shadow::global(1, 1, 1, 8);
        run(&s, t(1, 0, 0), Read).unwrap();
        run(&s, t(1, 0, 1), Read).unwrap();
        let Err(Conflict::Race(e)) = run(&s, t(1, 0, 0), Write) else {
            panic!()
        };
        assert_eq!(e.rec.thread(), 1);
        // Readers in two blocks, then a write by the second: the first block is named.
        let s = Shadow::global(1, 1, 1, 8);
        run(&s, t(1, 0, 4), Read).unwrap();
        run(&s, t(2, 0, 0), Read).unwrap();
        run(&s, t(2, 1, 0), Read).unwrap();
        let Err(Conflict::Race(e)) = run(&s, t(2, 1, 0), Write) else {
            panic!()
        };
        assert_eq!((e.rec.block(), e.rec.thread()), (1, 4));
    }

    #[test]
    fn shared_memory_reads_need_a_write_of_the_block() {
        let mut s = Shadow::shared();
        s.reset_shared(4, 1);
        assert!(matches!(
            run(&s, t(1, 0, 0), Read),
            Err(Conflict::Uninitialized)
        ));
        run(&s, t(1, 0, 0), Write).unwrap();
        run(&s, t(1, 1, 1), Read).unwrap();
        // A record of another block is stale: that block had its own shared memory.
        assert!(matches!(
            run(&s, t(2, 0, 0), Atomic),
            Err(Conflict::Uninitialized)
        ));
    }
}
