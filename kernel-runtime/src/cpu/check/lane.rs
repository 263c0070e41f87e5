//! One worker's shadow of one array: who last wrote and read each element, as this worker saw
//! it, and the rules that find a race or a read of shared memory never written from it.
//!
//! A lane belongs to one OS thread while the launch runs, so it is plain memory: no atomic
//! operation, no lock. Races between the blocks of one worker are found as they happen; the
//! launch compares the lanes of different workers when it ends (see
//! [`launch`](super::launch)).

use super::warpgroup::{Flight, Warpgroups};
use super::{clock, Who};
use crate::base::AccessKind;
use crate::base::WARP_SIZE;
use crate::cpu::finding::Access;
use crate::cpu::unwritten::{Marks, Origin, Unwritten};
use crate::dim::Dim3;
use std::cell::{Cell, RefCell};
use std::panic::Location;

/// The most barriers one block may pass in a checked launch.
pub(crate) const MAX_INTERVAL: u32 = (1 << INTERVAL_BITS) - 1;

const INTERVAL_BITS: u32 = 19;
const THREAD_BITS: u32 = 10;
/// Where a record's thread index starts.
const THREAD_SHIFT: u32 = 32 + INTERVAL_BITS;
/// A write record: the write was an atomic operation.
const ATOMIC: u64 = 1 << 61;
/// Several threads of the record's block and interval did this (atomics, or reads).
const MANY_THREADS: u64 = 1 << 62;
/// Several blocks did this (atomics, or reads).
const MANY_BLOCKS: u64 = 1 << 63;

/// Elements per page: a global lane stamps each page it touches with the launch, so that the
/// launch compares the lanes of two workers only where both touched a page.
pub(crate) const PAGE_BITS: u32 = 6;

/// One access record packed in a word: block (32 bits), interval (19), thread (10), flags (3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec(pub(crate) u64);

impl Rec {
    pub(crate) fn of(who: Who) -> Rec {
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
            || (self.has(MANY_THREADS) && self.of_interval(me))
    }
    /// Whether the record's access is of `me`'s block and barrier interval.
    fn of_interval(self, me: Who) -> bool {
        self.block() == me.block && self.interval() == me.interval
    }
    /// The kind of the write this record stands for.
    pub(crate) fn write_kind(self) -> AccessKind {
        if self.has(ATOMIC) {
            AccessKind::Atomic
        } else {
            AccessKind::Write
        }
    }
    /// The linear index of the record's block in the launch whose first block is `first`.
    pub(crate) fn block_index(self, first: u32) -> u64 {
        self.block().wrapping_sub(first) as u64
    }
    /// The access this record stands for, as a report names it, in a launch of `grid` blocks
    /// of `block` threads whose first block is `first`.
    pub(crate) fn access(
        self,
        kind: AccessKind,
        at: Option<&'static Location<'static>>,
        first: u32,
        grid: Dim3,
        block: Dim3,
    ) -> Access {
        Access {
            kind,
            block: grid.unflatten(self.block_index(first)),
            thread: block.unflatten(self.thread() as u64),
            at,
        }
    }
    /// Whether this write and `other` (of other blocks) race: unless both were atomics.
    pub(crate) fn writes_race(self, other: Rec) -> bool {
        !(self.has(ATOMIC) && other.has(ATOMIC))
    }
    /// The record's warp in its block.
    fn warp(self) -> u32 {
        self.thread() / WARP_SIZE
    }
}

/// Whether the access of `rec` at epoch `epoch` is ordered before an access of `me` (of the
/// same block and interval) by `syncwarp`: both lanes of one warp whose block keeps warp
/// clocks, and a `syncwarp` of `rec`'s lane after that access has reached `me`.
fn synced(rec: Rec, epoch: u32, me: Who) -> bool {
    me.epoch != 0
        && epoch != 0
        && rec.warp() == me.thread / WARP_SIZE
        && clock::seen(rec.thread() % WARP_SIZE) >= epoch
}

/// The index of `slot`'s `side` in a lane's table of groups.
fn group_key(slot: usize, side: Side) -> usize {
    slot * 2 + (side == Side::Read) as usize
}

/// Which record of an element: the last write or the read summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Write,
    Read,
}

/// The accesses of several threads of one block and interval that a record with `MANY_THREADS`
/// stands for, where the block keeps warp clocks: per lane of one warp, the epoch (0: none)
/// and line of its latest access, and one access of another warp.
#[derive(Clone, Debug)]
struct Group {
    /// Its record's [`group_key`].
    key: usize,
    block: u32,
    interval: u32,
    warp: u32,
    epochs: [u32; WARP_SIZE as usize],
    lines: [u32; WARP_SIZE as usize],
    other: Option<(Rec, u32)>,
}

impl Group {
    /// An empty group of the accesses of `rec`'s block and interval, kept per lane of its warp,
    /// for the record of key `key`.
    fn of(key: usize, rec: Rec) -> Group {
        Group {
            key,
            block: rec.block(),
            interval: rec.interval(),
            warp: rec.warp(),
            epochs: [0; WARP_SIZE as usize],
            lines: [0; WARP_SIZE as usize],
            other: None,
        }
    }

    /// Adds the access of `rec` at `epoch` on line `line`.
    fn add(&mut self, rec: Rec, epoch: u32, line: u32) {
        if rec.warp() == self.warp {
            let lane = (rec.thread() % WARP_SIZE) as usize;
            self.epochs[lane] = epoch;
            self.lines[lane] = line;
        } else if self.other.is_none() {
            self.other = Some((rec, line));
        }
    }

    /// The record of lane `lane`'s access.
    fn rec(&self, lane: usize) -> Rec {
        Rec::of(Who {
            block: self.block,
            interval: self.interval,
            thread: self.warp * WARP_SIZE + lane as u32,
            epoch: 0,
            phase: 0,
        })
    }

    /// An access of the group not ordered before one of `me` (of its block and interval), with
    /// its line: another warp's, or one of a lane of `me`'s warp that has not reached `me`.
    fn unordered(&self, me: Who) -> Option<(Rec, u32)> {
        let lanes = || (0..WARP_SIZE as usize).filter(|&l| self.epochs[l] != 0);
        if self.warp != me.thread / WARP_SIZE {
            return lanes().next().map(|l| (self.rec(l), self.lines[l]));
        }
        if let Some(other) = self.other {
            return Some(other);
        }
        let own = (me.thread % WARP_SIZE) as usize;
        lanes()
            .find(|&l| l != own && clock::seen(l as u32) < self.epochs[l])
            .map(|l| (self.rec(l), self.lines[l]))
    }
}

/// Where a lane's array lives: a writable array of the launch, or the block's shared memory
/// (one lane per worker, cleared for each block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Global,
    Shared,
}

/// The readers a read summary's flags stand for, for reports (rarely touched).
#[derive(Default)]
struct Witness {
    /// A second reader of the latest read's interval.
    other_thread: Cell<u64>,
    other_thread_at: Cell<u32>,
    /// A reader of another block than the latest read's.
    other_block: Cell<u64>,
    other_block_at: Cell<u32>,
}

/// `n` zeroed cells, from zeroed pages: a lane's elements cost memory only once touched.
/// `None` where the allocator cannot give them (a shadow of a huge array), never an abort.
fn zeroed<T>(n: usize) -> Option<Vec<T>> {
    // SAFETY: only instantiated with cells of integers and structs of them (below), for which
    // all-zero bytes are a valid value.
    let cells = unsafe { crate::zeroed::zeroed_vec::<T>(n) }?;
    huge_pages(cells.as_ptr() as usize, n * std::mem::size_of::<T>());
    Some(cells)
}

/// Asks the kernel to back the 2 MiB pages within `bytes` from `start` with huge pages where it
/// does so on request (Linux transparent huge pages in `madvise` mode): a block's accesses
/// reach rows far apart in a large array's shadow, which with 4 KiB pages costs a TLB miss
/// almost every row.
fn huge_pages(start: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (from, to) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
        if to > from {
            // SAFETY: the range lies within one live allocation of ours, and this advice does
            // not change its contents; a refusal only leaves small pages.
            unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

/// One worker's shadow of an array (of a block's shared memory: one slot per byte): per
/// element, the last write and the read summary, and the source lines of each (for reports),
/// in arrays of their own, so that a write to an array nobody reads touches 12 bytes.
pub(crate) struct Lane {
    scope: Scope,
    writes: Vec<Cell<u64>>,
    reads: Vec<Cell<u64>>,
    write_at: Vec<Cell<u32>>,
    read_at: Vec<Cell<u32>>,
    witnesses: Vec<Witness>,
    /// Where the block keeps warp clocks: the epoch of the access of each record.
    write_epochs: Vec<Cell<u32>>,
    read_epochs: Vec<Cell<u32>>,
    /// Where the block keeps warp clocks: the groups of records with `MANY_THREADS` (cleared
    /// with each block of shared memory, each launch of a global array), and per record (by
    /// [`group_key`]) one more than the index of its group there, or 0.
    groups: RefCell<Vec<Group>>,
    group_of: Vec<Cell<u32>>,
    /// Per page of a global lane, the number of the first block of the last launch that touched
    /// it.
    pages: Vec<Cell<u32>>,
    /// Whether a thread of this launch has read the array on this worker (else writes skip the
    /// read summary).
    any_reads: Cell<bool>,
    /// The number of the launch's first block: records of this launch have block numbers
    /// `first .. first + blocks`.
    first: u32,
    blocks: u32,
    /// The block clock when the lane was last cleared.
    cleared_at: u64,
    /// A global lane's array's elements that nothing had written before the launch (null where
    /// none): a read of one that no write of the launch on this worker preceded is reported.
    marks: *const Marks,
    /// A shared lane's block's warpgroup products: the operands in flight, which no write may
    /// touch; and whether the block has called a warpgroup operation (else writes skip them).
    warpgroups: RefCell<Warpgroups>,
    any_warpgroups: Cell<bool>,
}

// SAFETY: a lane is touched by one OS thread at a time: the worker that claimed it while the
// launch runs, then the thread that compares the lanes once every worker is done; its marks
// are read while the launch that set them runs, and reset before the lane is reused.
unsafe impl Sync for Lane {}
// SAFETY: as above.
unsafe impl Send for Lane {}

/// The earlier access of a race, as the lane recorded it.
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
    /// It reads an element of an array that nothing has written, of this origin.
    Unwritten(Origin),
    /// It writes shared memory that this warpgroup product still reads.
    InFlight(Flight),
}

/// A fixed address in the program: source lines are kept as 32-bit distances from it.
static ANCHOR: u8 = 0;

/// `at` as its distance from [`ANCHOR`], or 0 (unknown) when that does not fit in 32 bits, as
/// for a kernel in a library loaded far away.
#[inline(always)]
fn encode(at: &'static Location<'static>) -> u32 {
    let d = (at as *const Location<'static> as isize).wrapping_sub(&ANCHOR as *const u8 as isize);
    i32::try_from(d).map_or(0, |d| d as u32)
}

fn location(p: &Cell<u32>) -> Option<&'static Location<'static>> {
    line_location(p.get())
}

/// The line an [`encode`]d distance stands for.
fn line_location(d: u32) -> Option<&'static Location<'static>> {
    match d {
        0 => None,
        d => {
            let addr = (&ANCHOR as *const u8 as isize).wrapping_add(d as i32 as isize);
            // SAFETY: only `encode`d addresses of `&'static Location`s (or 0) are stored.
            Some(unsafe { &*(addr as *const Location<'static>) })
        }
    }
}

/// What a lane holds of one element after the run, for the comparison of workers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    /// The last write of this launch on this worker, with its line.
    pub(crate) write: Option<(Rec, Option<&'static Location<'static>>)>,
    /// The latest read of this launch on this worker, with its line.
    pub(crate) read: Option<(Rec, Option<&'static Location<'static>>)>,
}

impl Lane {
    pub(crate) const fn new(scope: Scope) -> Lane {
        Lane {
            scope,
            writes: Vec::new(),
            reads: Vec::new(),
            write_at: Vec::new(),
            read_at: Vec::new(),
            witnesses: Vec::new(),
            write_epochs: Vec::new(),
            read_epochs: Vec::new(),
            groups: RefCell::new(Vec::new()),
            group_of: Vec::new(),
            pages: Vec::new(),
            any_reads: Cell::new(false),
            first: 0,
            blocks: 0,
            marks: std::ptr::null(),
            cleared_at: 0,
            warpgroups: RefCell::new(Warpgroups::new()),
            any_warpgroups: Cell::new(false),
        }
    }

    /// Makes room for `len` elements (a larger lane starts empty: its records are not kept).
    fn grow(&mut self, len: usize) -> Result<(), String> {
        if self.writes.len() >= len {
            return Ok(());
        }
        let too_large = || {
            let per_element = 2 * std::mem::size_of::<Cell<u64>>()
                + 4 * std::mem::size_of::<Cell<u32>>()
                + std::mem::size_of::<Witness>()
                + 2 * std::mem::size_of::<Cell<u32>>();
            format!(
                "checked mode cannot allocate the shadow of {len} elements ({} bytes)",
                len.saturating_mul(per_element)
            )
        };
        // The old shadow goes first, so that its memory can serve the new one; the lane is
        // replaced only once all of the new one is there.
        let scope = self.scope;
        let (first, blocks, cleared_at) = (self.first, self.blocks, self.cleared_at);
        *self = Lane::new(scope);
        let grown = Lane {
            writes: zeroed(len).ok_or_else(too_large)?,
            reads: zeroed(len).ok_or_else(too_large)?,
            write_at: zeroed(len).ok_or_else(too_large)?,
            read_at: zeroed(len).ok_or_else(too_large)?,
            witnesses: zeroed(len).ok_or_else(too_large)?,
            write_epochs: zeroed(len).ok_or_else(too_large)?,
            read_epochs: zeroed(len).ok_or_else(too_large)?,
            group_of: zeroed(len.saturating_mul(2)).ok_or_else(too_large)?,
            pages: match scope {
                Scope::Global => zeroed(len.div_ceil(1 << PAGE_BITS)).ok_or_else(too_large)?,
                Scope::Shared => Vec::new(),
            },
            first,
            blocks,
            cleared_at,
            ..Lane::new(scope)
        };
        *self = grown;
        Ok(())
    }

    /// Clears the records of the first `len` elements, and every group.
    fn clear(&mut self, len: usize) {
        self.writes[..len].iter().for_each(|w| w.set(0));
        self.reads[..len].iter().for_each(|r| r.set(0));
        self.clear_groups();
    }

    /// Drops the groups: they stand for records of an earlier block or launch (an index left
    /// in `group_of` names no group, or one of another record, which [`Lane::group`] tells).
    fn clear_groups(&mut self) {
        self.groups.get_mut().clear();
    }

    /// The group of the record of key `key`, if it has one.
    fn group(&self, key: usize) -> Option<std::cell::Ref<'_, Group>> {
        let index = (self.group_of[key].get() as usize).checked_sub(1)?;
        std::cell::Ref::filter_map(self.groups.borrow(), |g| {
            g.get(index).filter(|g| g.key == key)
        })
        .ok()
    }

    /// Readies a lane of `len` elements of a writable array for the launch whose blocks are
    /// numbered `first ..` (`start` on the block clock): it holds no record of this launch.
    pub(crate) fn for_launch(
        &mut self,
        len: usize,
        start: u64,
        first: u32,
        blocks: u32,
    ) -> Result<(), String> {
        debug_assert_eq!(self.scope, Scope::Global);
        self.grow(len)?;
        // Block numbers are the clock modulo 2³²: clear before an old record's number (or a
        // page's stamp) could come round again.
        if start + blocks as u64 - self.cleared_at >= 1 << 32 {
            let all = self.writes.len();
            self.clear(all);
            self.pages.iter().for_each(|p| p.set(0));
            self.cleared_at = start;
        }
        self.clear_groups();
        self.any_reads.set(false);
        self.first = first;
        self.blocks = blocks;
        self.marks = std::ptr::null();
        Ok(())
    }

    /// Makes `marks` the elements of the lane's array that nothing had written before the
    /// launch, which must outlive the lane's use in it.
    pub(crate) fn set_marks(&mut self, marks: Option<&Marks>) {
        self.marks = marks.map_or(std::ptr::null(), |m| m as *const Marks);
    }

    /// The elements of a read (or atomic update) at `slot` that nothing has written: where
    /// the marks hold it and no write of this launch on this worker came first, their origin.
    #[inline(always)]
    fn unwritten(&self, slot: usize) -> Option<Origin> {
        // SAFETY: non-null marks outlive the launch (`set_marks`).
        let marks = unsafe { self.marks.as_ref() }?;
        (marks.contains(slot) && !self.of_launch(Rec(self.writes[slot].get())))
            .then(|| marks.origin())
    }

    /// Clears from `marks` (the lane's array's, before the launch) the elements that a write
    /// of this launch on this worker wrote.
    pub(crate) fn clear_written(&self, marks: &mut Unwritten) {
        let written = |slot: usize| self.of_launch(Rec(self.writes[slot].get()));
        marks.clear_where(self.writes.len(), written);
    }

    /// An empty lane of a block's shared memory (one slot per byte).
    pub(crate) const fn shared() -> Lane {
        Lane::new(Scope::Shared)
    }

    /// Clears the first `len` slots of a block's shared memory lane, for a block of the launch
    /// whose first block is numbered `first`.
    pub(crate) fn reset_shared(&mut self, len: usize, first: u32) -> Result<(), String> {
        self.grow(len)?;
        self.clear(len);
        self.warpgroups.get_mut().clear();
        self.any_warpgroups.set(false);
        self.any_reads.set(true);
        self.first = first;
        Ok(())
    }

    /// A shared lane's record of its block's warpgroup products, which its writes now test.
    pub(crate) fn warpgroups(&self) -> &RefCell<Warpgroups> {
        self.any_warpgroups.set(true);
        &self.warpgroups
    }

    /// The number of the launch's first block.
    pub(crate) fn first(&self) -> u32 {
        self.first
    }

    /// Records a plain write of `me` to slot `slot` if it is the common case, which needs no
    /// check: an element of a writable array that no thread has read on this worker in this
    /// launch, and that only `me` (or no thread) has written; says whether it was. The views
    /// inline this, and call [`Lane::access`] for every other access.
    #[inline(always)]
    pub(crate) fn plain_write(&self, slot: usize, me: Who, at: &'static Location<'static>) -> bool {
        if self.scope != Scope::Global || self.any_reads.get() || me.epoch != 0 {
            return false;
        }
        if slot >= self.writes.len() {
            return false;
        }
        // SAFETY: `grow` gives every per-element array the length of `writes` and, in a global
        // lane (checked above), `pages` a page per `1 << PAGE_BITS` of them.
        let (w, line, page) = unsafe {
            (
                self.writes.get_unchecked(slot),
                self.write_at.get_unchecked(slot),
                self.pages.get_unchecked(slot >> PAGE_BITS),
            )
        };
        let last = Rec(w.get());
        let mine = Rec::of(me);
        if last != mine && self.of_launch(last) {
            return false;
        }
        page.set(self.first);
        w.set(mine.0);
        line.set(encode(at));
        true
    }

    /// Records the plain accesses of `kind` of a run of `n` threads along x, thread `k` of the
    /// run accessing slot `start + k * step`: the first thread is `first`, thread x `t0` of its
    /// block, whose rows are `width` threads wide (thread `k` is thread x `(t0 + k) % width` of
    /// the `(t0 + k) / width`-th block after `first`'s); the first that conflicts, with its `k`
    /// and the kind of the access that found it. Where each slot's records of this launch are
    /// the accessing thread's own or none (the common case), consecutive slots are checked and
    /// recorded in plain loops the optimiser vectorises; else one access at a time.
    pub(crate) fn record_run(
        &self,
        kind: Run,
        (start, step, n): (usize, usize, usize),
        (first, t0, width): (Who, u32, u32),
        at: &'static Location<'static>,
    ) -> Result<(), (usize, Conflict, AccessKind)> {
        let runs = Runs::new(first, t0, width);
        let one_by_one = |from: usize| {
            (from..n).try_for_each(|k| {
                let (me, slot) = (runs.who(k), start + k * step);
                kind.accesses().iter().try_for_each(|&access| {
                    self.access(slot, access, me, at)
                        .map_err(|c| (k, c, access))
                })
            })
        };
        let end = start + step * n.saturating_sub(1);
        // Reads of an array with unwritten elements are checked one by one.
        let plain = self.scope == Scope::Global
            && first.epoch == 0
            && (kind == Run::Write || self.marks.is_null());
        let numbers = Numbering::of(runs).filter(|_| step == 1);
        let (Some(numbers), true, false) = (numbers, plain, n == 0 || end >= self.writes.len())
        else {
            return one_by_one(0);
        };
        let (words, lines, other) = match kind {
            Run::Read => (&self.reads, &self.read_at, Some(&self.writes)),
            Run::Write | Run::Update => (
                &self.writes,
                &self.write_at,
                self.any_reads.get().then_some(&self.reads),
            ),
        };
        if kind == Run::Read {
            self.any_reads.set(true);
        }
        // SAFETY: a lane is its worker's alone while the launch runs: no other reference reads
        // or writes these cells meanwhile; `start..=end` lies in every per-element array
        // (checked above, against `writes`, whose length they all have).
        let cells = unsafe { (cells_mut(words, start, n), cells_mut(lines, start, n)) };
        let other = other.map(|o| &o[start..start + n]);
        let tiles = Tiles {
            numbers,
            line: encode(at),
            first: self.first,
            blocks: self.blocks,
        };
        let done = tiles.record(cells, other).unwrap_or(n);
        self.stamp_pages(start, step, done);
        one_by_one(done)
    }

    /// Stamps the pages of the slots `start + k * step` (`k < n`) with this launch.
    fn stamp_pages(&self, start: usize, step: usize, n: usize) {
        if n == 0 {
            return;
        }
        let end = start + step * (n - 1);
        if step < 1 << PAGE_BITS {
            let pages = &self.pages[start >> PAGE_BITS..=end >> PAGE_BITS];
            pages.iter().for_each(|p| p.set(self.first));
        } else {
            (0..n).for_each(|k| self.pages[(start + k * step) >> PAGE_BITS].set(self.first));
        }
    }

    /// Records an access of `me` to slot `slot`; says what is wrong with it.
    #[inline]
    pub(crate) fn access(
        &self,
        slot: usize,
        kind: AccessKind,
        me: Who,
        at: &'static Location<'static>,
    ) -> Result<(), Conflict> {
        if slot >= self.writes.len() {
            // Not reached: views only record slots inside their array.
            return Ok(());
        }
        if self.scope == Scope::Global {
            self.pages[slot >> PAGE_BITS].set(self.first);
        }
        if self.any_warpgroups.get() && kind != AccessKind::Read {
            if let Some(flight) = self.warpgroups.borrow().in_flight(slot, me) {
                return Err(Conflict::InFlight(flight));
            }
        }
        let w = &self.writes[slot];
        // Shared memory starts each block unwritten: a read needs a write of this block first.
        // The read is recorded all the same, so that a write by another thread later in its
        // barrier interval is reported as the race it is; only a read that no such write
        // follows is uninitialized (see `check::report`).
        let unwritten = self.scope == Scope::Shared
            && kind != AccessKind::Write
            && !self.present(Rec(w.get()), me);
        // A global array's element that nothing wrote before the launch, nor in it yet.
        let never = match kind {
            AccessKind::Write => None,
            _ => self.unwritten(slot),
        };
        match kind {
            AccessKind::Read => self.read(slot, me, at)?,
            _ => self.write(slot, me, kind, at)?,
        }
        if unwritten {
            return Err(Conflict::Uninitialized);
        }
        never.map_or(Ok(()), |origin| Err(Conflict::Unwritten(origin)))
    }

    /// A plain read: check the last write, then merge it into the read summary.
    #[inline]
    fn read(&self, slot: usize, me: Who, at: &'static Location<'static>) -> Result<(), Conflict> {
        if let Some(earlier) = self.unordered_write(slot, me) {
            return Err(Conflict::Race(earlier));
        }
        self.any_reads.set(true);
        if me.epoch != 0 {
            self.join_read(slot, me, at);
            return Ok(());
        }
        let r = &self.reads[slot];
        let old = Rec(r.get());
        let new = self.merge_read(old, me);
        if new != old {
            r.set(new.0);
            self.note_read(slot, old, new, me, at);
        }
        Ok(())
    }

    /// A plain write or an atomic operation: check the earlier write and the reads, then
    /// record it as the last write.
    #[inline]
    fn write(
        &self,
        slot: usize,
        me: Who,
        kind: AccessKind,
        at: &'static Location<'static>,
    ) -> Result<(), Conflict> {
        let atomic = kind == AccessKind::Atomic;
        let w = &self.writes[slot];
        let last = Rec(w.get());
        let both_atomic = atomic && last.has(ATOMIC) && self.present(last, me);
        if !both_atomic {
            if let Some(earlier) = self.unordered_write(slot, me) {
                return Err(Conflict::Race(earlier));
            }
        }
        if self.any_reads.get() {
            self.check_reads(slot, me)?;
        }
        // A thread's atomic after its own plain write of the interval keeps the plain write as
        // the record: another thread's atomic is not ordered with that write, and races it.
        let own_plain_write = !last.has(ATOMIC | MANY_THREADS)
            && self.present(last, me)
            && last.of_interval(me)
            && last.thread() == me.thread;
        if atomic && own_plain_write {
            return Ok(());
        }
        if me.epoch != 0 && both_atomic && self.joins_group(slot, Side::Write, last, me) {
            self.add_to_group(slot, Side::Write, last, me, at);
            w.set(last.with(MANY_THREADS, true).0);
            return Ok(());
        }
        let same_interval = last.of_interval(me);
        let new = Rec::of(me)
            .with(ATOMIC, atomic)
            .with(
                MANY_BLOCKS,
                both_atomic && (last.has(MANY_BLOCKS) || last.block() != me.block),
            )
            .with(
                MANY_THREADS,
                me.epoch == 0
                    && both_atomic
                    && same_interval
                    && (last.has(MANY_THREADS) || last.thread() != me.thread),
            );
        w.set(new.0);
        self.write_at[slot].set(encode(at));
        if me.epoch != 0 {
            self.write_epochs[slot].set(me.epoch);
        }
        Ok(())
    }

    /// The earlier write of `slot` that is not ordered before an access of `me`, if any.
    #[inline]
    fn unordered_write(&self, slot: usize, me: Who) -> Option<Earlier> {
        let last = Rec(self.writes[slot].get());
        if !self.present(last, me) {
            return None;
        }
        let (rec, line) = if me.epoch == 0 {
            if !last.any_unordered_with(me) {
                return None;
            }
            (last, self.write_at[slot].get())
        } else {
            self.unordered(slot, Side::Write, last, me)?
        };
        Some(Earlier {
            rec,
            kind: last.write_kind(),
            at: line_location(line),
        })
    }

    /// Whether a read this lane holds of `slot` is not ordered with a write by `me`.
    fn check_reads(&self, slot: usize, me: Who) -> Result<(), Conflict> {
        let reads = Rec(self.reads[slot].get());
        if !self.present(reads, me) {
            return Ok(());
        }
        let race = |(rec, line)| {
            Err(Conflict::Race(Earlier {
                rec,
                kind: AccessKind::Read,
                at: line_location(line),
            }))
        };
        if me.epoch != 0 {
            return self
                .unordered(slot, Side::Read, reads, me)
                .map_or(Ok(()), race);
        }
        if !reads.any_unordered_with(me) {
            return Ok(());
        }
        // Name a reader that is not ordered with this write.
        let witness = &self.witnesses[slot];
        race(if reads.unordered_with(me) {
            (reads, self.read_at[slot].get())
        } else if reads.has(MANY_BLOCKS) && reads.block() == me.block {
            (Rec(witness.other_block.get()), witness.other_block_at.get())
        } else {
            (
                Rec(witness.other_thread.get()),
                witness.other_thread_at.get(),
            )
        })
    }

    /// Where the block keeps warp clocks: an access that the record `rec` of `slot`'s `side`
    /// stands for and that is not ordered before an access of `me`, with its line.
    fn unordered(&self, slot: usize, side: Side, rec: Rec, me: Who) -> Option<(Rec, u32)> {
        let (epoch, line) = self.epoch_and_line(slot, side);
        let line = line.get();
        if rec.block() != me.block {
            return Some((rec, line));
        }
        if rec.has(MANY_BLOCKS) {
            // Another block's access too: a read summary keeps one as its witness.
            let witness = &self.witnesses[slot];
            return Some(match side {
                Side::Read => (Rec(witness.other_block.get()), witness.other_block_at.get()),
                Side::Write => (rec, line),
            });
        }
        if rec.interval() != me.interval {
            return None;
        }
        if rec.has(MANY_THREADS) {
            return match self.group(group_key(slot, side)).as_deref() {
                Some(g) if g.block == rec.block() && g.interval == rec.interval() => {
                    g.unordered(me)
                }
                // Not reached: a flagged record of a block with warp clocks has its group.
                _ => Some((rec, line)),
            };
        }
        (rec.thread() != me.thread && !synced(rec, epoch.get(), me)).then_some((rec, line))
    }

    /// The cells of `slot`'s `side` that hold its record's epoch and line.
    fn epoch_and_line(&self, slot: usize, side: Side) -> (&Cell<u32>, &Cell<u32>) {
        match side {
            Side::Write => (&self.write_epochs[slot], &self.write_at[slot]),
            Side::Read => (&self.read_epochs[slot], &self.read_at[slot]),
        }
    }

    /// Where the block keeps warp clocks: whether an access of `me` joins the group of `slot`'s
    /// `side` rather than replacing its record `old`: `old` stands for accesses of `me`'s block
    /// and interval, by several threads or by another thread that no `syncwarp` has ordered
    /// before `me`.
    fn joins_group(&self, slot: usize, side: Side, old: Rec, me: Who) -> bool {
        let (epoch, _) = self.epoch_and_line(slot, side);
        self.present(old, me)
            && old.of_interval(me)
            && (old.has(MANY_THREADS)
                || (old.thread() != me.thread && !synced(old, epoch.get(), me)))
    }

    /// Merges a read of `me` into the read summary of `slot` where the block keeps warp clocks:
    /// the summary names one read when it is the only one of its interval or every other one
    /// of the interval is ordered before it; else the reads are kept in a group.
    fn join_read(&self, slot: usize, me: Who, at: &'static Location<'static>) {
        let r = &self.reads[slot];
        let old = Rec(r.get());
        if self.joins_group(slot, Side::Read, old, me) {
            self.add_to_group(slot, Side::Read, old, me, at);
            r.set(old.with(MANY_THREADS, true).0);
            return;
        }
        // Of this interval, `old` is ordered before this read, which stands for it from now on;
        // of another, `merge_read` says what the summary becomes (never `MANY_THREADS`).
        let new = if self.present(old, me) && old.of_interval(me) {
            Rec::of(me).with(MANY_BLOCKS, old.has(MANY_BLOCKS))
        } else {
            self.merge_read(old, me)
        };
        r.set(new.0);
        self.note_read(slot, old, new, me, at);
        self.read_epochs[slot].set(me.epoch);
    }

    /// Adds an access of `me` to the group of `slot`'s `side`, whose record `old` stands for
    /// accesses of `me`'s block and interval; starts the group with `old`'s access unless
    /// `old` has `MANY_THREADS` already.
    fn add_to_group(&self, slot: usize, side: Side, old: Rec, me: Who, at: &'static Location) {
        let (epoch, line) = self.epoch_and_line(slot, side);
        let key = group_key(slot, side);
        let current = old.has(MANY_THREADS) && self.group(key).is_some();
        let mut groups = self.groups.borrow_mut();
        if !current {
            let mut group = Group::of(key, old);
            group.add(old, epoch.get(), line.get());
            groups.push(group);
            self.group_of[key].set(groups.len() as u32);
        }
        let index = self.group_of[key].get() as usize - 1;
        let group = &mut groups[index];
        group.add(Rec::of(me), me.epoch, encode(at));
    }

    /// Whether `rec` records an access of this launch (of this block, for shared memory).
    #[inline(always)]
    fn present(&self, rec: Rec, me: Who) -> bool {
        match self.scope {
            // Another block's access in an earlier phase of a cooperative launch is ordered
            // before `me`'s by the grid barrier between them.
            // So is every access of a record that several blocks share and whose latest access
            // (the one it holds) came before the phase: blocks run phase after phase.
            Scope::Global => {
                let earlier_phase = rec.interval() < me.phase;
                self.of_launch(rec)
                    && (rec.block() == me.block || !earlier_phase)
                    && !(earlier_phase && rec.has(MANY_BLOCKS))
            }
            Scope::Shared => rec.block() == me.block,
        }
    }

    /// Whether `rec` records an access of this launch.
    #[inline(always)]
    fn of_launch(&self, rec: Rec) -> bool {
        rec.block().wrapping_sub(self.first) < self.blocks
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
    fn note_read(&self, slot: usize, old: Rec, new: Rec, me: Who, at: &'static Location<'static>) {
        let witness = &self.witnesses[slot];
        if new.has(MANY_THREADS) && !old.has(MANY_THREADS) {
            witness.other_thread.set(Rec::of(me).0);
            witness.other_thread_at.set(encode(at));
            return;
        }
        if self.present(old, me) && old.block() != me.block {
            witness.other_block.set(old.0);
            witness.other_block_at.set(self.read_at[slot].get());
        }
        self.read_at[slot].set(encode(at));
    }

    /// Whether this launch touched page `page` of this global lane.
    pub(crate) fn touched(&self, page: usize) -> bool {
        self.pages.get(page).is_some_and(|p| p.get() == self.first)
    }

    /// What this global lane holds of `slot` from this launch.
    pub(crate) fn held(&self, slot: usize) -> Held {
        let write = Rec(self.writes[slot].get());
        let read = Rec(self.reads[slot].get());
        Held {
            write: self
                .of_launch(write)
                .then(|| (write, location(&self.write_at[slot]))),
            read: (self.any_reads.get() && self.of_launch(read))
                .then(|| (read, location(&self.read_at[slot]))),
        }
    }
}

/// What each thread of a run does to its element (see [`Lane::record_run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Reads it.
    Read,
    /// Writes it.
    Write,
    /// Reads it, then writes it (a compound assignment, `c[i] += ..`). Where nothing stands in
    /// the way it is recorded as the write alone: that write is ordered after the read, and
    /// every access of another thread that races with the read races with it too.
    Update,
}

impl Run {
    /// The accesses each thread makes, in order.
    fn accesses(self) -> &'static [AccessKind] {
        match self {
            Run::Read => &[AccessKind::Read],
            Run::Write => &[AccessKind::Write],
            Run::Update => &[AccessKind::Read, AccessKind::Write],
        }
    }
}

/// The records of the threads of a run (see [`Lane::record_run`]) whose blocks' rows are a
/// power of two threads wide, as arithmetic on the thread's place in the run that the
/// optimiser vectorises.
#[derive(Clone, Copy)]
struct Numbering {
    /// The run's first thread's block number, its thread x and the index of its row's thread
    /// x 0 in the block.
    block: u64,
    t0: usize,
    row: u64,
    shift: u32,
    mask: usize,
}

impl Numbering {
    fn of(runs: Runs) -> Option<Numbering> {
        runs.width.is_power_of_two().then(|| Numbering {
            block: runs.first.block as u64,
            t0: runs.t0 as usize,
            row: (runs.first.thread - runs.t0) as u64,
            shift: runs.width.trailing_zeros(),
            mask: runs.width as usize - 1,
        })
    }

    /// The record of thread `k` of the run, as [`Rec::of`] makes it.
    #[inline(always)]
    fn rec(&self, k: usize) -> u64 {
        let t = self.t0 + k;
        let block = (self.block + (t >> self.shift) as u64) & u32::MAX as u64;
        block | (self.row + (t & self.mask) as u64) << THREAD_SHIFT
    }
}

/// Records a run of plain writes to consecutive slots tile by tile: each tile's last writes
/// checked, then written while they are in the cache.
struct Tiles {
    numbers: Numbering,
    line: u32,
    /// The launch's blocks: records of other launches do not stand in the way.
    first: u32,
    blocks: u32,
}

/// Slots per tile.
const TILE: usize = 512;

impl Tiles {
    /// Records the run in `words` and `lines` (its slots' last writes, or read summaries, and
    /// their lines) up to the first tile in which a record of another thread of this launch
    /// stands there or in `other` (the slots' read summaries for a write, last writes for a
    /// read): that tile's first `k`, or `None` once all are recorded.
    fn record(
        &self,
        cells: (&mut [u64], &mut [u32]),
        other: Option<&[Cell<u64>]>,
    ) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::exec::wide_vectors() {
            // SAFETY: the CPU has every feature `record_wide` is compiled for (checked above).
            return unsafe { self.record_wide(cells, other) };
        }
        self.record_tiles(cells, other)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    unsafe fn record_wide(
        &self,
        cells: (&mut [u64], &mut [u32]),
        other: Option<&[Cell<u64>]>,
    ) -> Option<usize> {
        self.record_tiles(cells, other)
    }

    #[inline(always)]
    fn record_tiles(
        &self,
        (words, lines): (&mut [u64], &mut [u32]),
        other: Option<&[Cell<u64>]>,
    ) -> Option<usize> {
        let tiles = words.chunks_mut(TILE).zip(lines.chunks_mut(TILE));
        for (t, (ws, ls)) in tiles.enumerate() {
            let k0 = t * TILE;
            let mut clash = self.clashes(k0, ws.iter().copied());
            if let Some(other) = other {
                let os = &other[k0..k0 + ws.len()];
                clash |= self.clashes(k0, os.iter().map(Cell::get));
            }
            if clash {
                return Some(k0);
            }
            for (j, w) in ws.iter_mut().enumerate() {
                *w = self.numbers.rec(k0 + j);
            }
            ls.fill(self.line);
        }
        None
    }

    /// Whether a record of `records` (those of the slots from the run's `k0`-th on) is one
    /// of this launch other than its slot's thread's own plain access.
    #[inline(always)]
    fn clashes(&self, k0: usize, records: impl Iterator<Item = u64>) -> bool {
        let (first, blocks) = (self.first, self.blocks);
        records.enumerate().fold(false, |c, (j, old)| {
            let mine = self.numbers.rec(k0 + j);
            c | (old != mine && (old as u32).wrapping_sub(first) < blocks)
        })
    }
}

/// The threads of a run along x, as [`Lane::record_run`] takes them: from `first`, thread x
/// `t0` of its block, whose rows are `width` threads wide.
#[derive(Clone, Copy)]
struct Runs {
    first: Who,
    t0: u32,
    width: u32,
}

impl Runs {
    fn new(first: Who, t0: u32, width: u32) -> Runs {
        Runs {
            first,
            t0,
            width: width.max(1),
        }
    }

    /// Thread `k` of the run.
    fn who(&self, k: usize) -> Who {
        let t = self.t0 as usize + k;
        let w = self.width as usize;
        Who {
            block: self.first.block.wrapping_add((t / w) as u32),
            thread: self.first.thread - self.t0 + (t % w) as u32,
            ..self.first
        }
    }
}

/// The cells `start..start + n` of `cells` as plain memory.
///
/// # Safety
/// The range must lie in `cells`, and no other reference may read or write those cells while
/// the slice lives.
#[allow(clippy::mut_from_ref)]
unsafe fn cells_mut<T: Copy>(cells: &[Cell<T>], start: usize, n: usize) -> &mut [T] {
    debug_assert!(start + n <= cells.len());
    // SAFETY: `Cell<T>` has `T`'s layout and allows writes through a shared reference; the
    // range and its exclusive use are the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(cells.as_ptr().add(start) as *mut T, n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> &'static Location<'static> {
        Location::caller()
    }

    fn global(blocks: u32) -> Lane {
        let mut lane = Lane::new(Scope::Global);
        lane.for_launch(1, 1, 1, blocks).unwrap();
        lane
    }

    /// An access to element `slot` as a view records it: a plain write first tries the inline
    /// path.
    fn run_at(lane: &Lane, slot: usize, who: Who, kind: AccessKind) -> Result<(), Conflict> {
        if kind == Write && lane.plain_write(slot, who, at()) {
            return Ok(());
        }
        lane.access(slot, kind, who, at())
    }

    /// An access to element 0 (see [`run_at`]).
    fn run(lane: &Lane, who: Who, kind: AccessKind) -> Result<(), Conflict> {
        run_at(lane, 0, who, kind)
    }

    const fn t(block: u32, interval: u32, thread: u32) -> Who {
        Who {
            block,
            interval,
            thread,
            epoch: 0,
            phase: 0,
        }
    }

    use AccessKind::{Atomic, Read, Write};

    #[test]
    fn records_of_other_launches_are_not_this_ones() {
        // Launch 1 (blocks 1..=8) writes; launch 2 (blocks 9..=16) reuses the lane.
        let mut lane = global(8);
        run(&lane, t(1, 0, 0), Write).unwrap();
        assert!(lane.touched(0) && lane.held(0).write.is_some());
        lane.for_launch(1, 9, 9, 8).unwrap();
        assert!(!lane.touched(0) && lane.held(0).write.is_none());
        run(&lane, t(9, 0, 1), Write).unwrap();
        run(&lane, t(10, 0, 0), Read).unwrap_err();
    }

    /// A lane of `len` elements for a launch of `blocks` blocks numbered from 1.
    fn global_of(len: usize, blocks: u32) -> Lane {
        let mut lane = Lane::new(Scope::Global);
        lane.for_launch(len, 1, 1, blocks).unwrap();
        lane
    }

    #[test]
    fn a_run_of_writes_records_each_thread_as_one_write_would() {
        // Rows of 16 threads (a power of two: the vectorised tiles) and of 12 (block by block),
        // a run of 1100 threads from thread x 5 of block 3, whose row's thread x 0 is thread 32.
        for width in [16, 12] {
            let lane = global_of(4096, 200);
            let first = t(3, 0, 32 + 5);
            lane.record_run(Run::Write, (100, 1, 1100), (first, 5, width), at())
                .unwrap();
            let runs = Runs::new(first, 5, width);
            for k in [0, 1, 10, 11, 599, 1099] {
                let held = lane.held(100 + k).write.expect("recorded").0;
                assert_eq!(held, Rec::of(runs.who(k)), "width {width}, k {k}");
                assert!(lane.touched((100 + k) >> PAGE_BITS));
            }
            // Thread x 16 of the row lies in the next block for either width.
            assert_eq!(runs.who(11).block, 4);
            assert_eq!(lane.held(99).write, None);
            assert_eq!(lane.held(1200).write, None);
            // The same threads again: their own writes.
            lane.record_run(Run::Write, (100, 1, 1100), (first, 5, width), at())
                .unwrap();
            // Other threads over the same slots: the first slot written by another names it.
            let other = t(150, 0, 0);
            let Err((k, Conflict::Race(earlier), _)) =
                lane.record_run(Run::Write, (700, 1, 10), (other, 0, width), at())
            else {
                panic!("no race")
            };
            assert_eq!((k, earlier.rec), (0, Rec::of(runs.who(600))));
        }
    }

    #[test]
    fn runs_of_reads_then_writes_of_the_same_threads_pass_and_another_threads_write_races() {
        let lane = global_of(256, 8);
        let first = t(2, 0, 0);
        // `c[i] += ..`: each thread reads its element, then writes it.
        lane.record_run(Run::Read, (0, 1, 128), (first, 0, 64), at())
            .unwrap();
        lane.record_run(Run::Write, (0, 1, 128), (first, 0, 64), at())
            .unwrap();
        let held = lane.held(70);
        let me = Rec::of(Runs::new(first, 0, 64).who(70));
        assert_eq!((held.read.unwrap().0, held.write.unwrap().0), (me, me));
        // Another block's threads write elements read above: the first names its reader.
        let Err((k, Conflict::Race(earlier), _)) =
            lane.record_run(Run::Write, (100, 1, 8), (t(5, 0, 0), 0, 64), at())
        else {
            panic!("no race")
        };
        assert_eq!((k, earlier.kind), (0, AccessKind::Write));
        // Reads of elements another thread wrote: a race too.
        let Err((k, Conflict::Race(earlier), _)) =
            lane.record_run(Run::Read, (10, 1, 4), (t(6, 0, 0), 0, 64), at())
        else {
            panic!("no race")
        };
        assert_eq!((k, earlier.kind), (0, AccessKind::Write));
        // Reads by several threads of one element's neighbours, no write: no race.
        let lane = global_of(256, 8);
        lane.record_run(Run::Read, (0, 1, 64), (t(1, 0, 0), 0, 64), at())
            .unwrap();
        lane.record_run(Run::Read, (0, 1, 64), (t(3, 0, 0), 0, 64), at())
            .unwrap();
        assert!(lane.held(5).read.is_some_and(|(r, _)| r.has(MANY_BLOCKS)));
    }

    #[test]
    fn a_run_that_writes_one_slot_from_two_threads_races() {
        let lane = global_of(8, 4);
        let Err((k, Conflict::Race(earlier), _)) =
            lane.record_run(Run::Write, (3, 0, 2), (t(1, 0, 0), 0, 32), at())
        else {
            panic!("no race")
        };
        assert_eq!((k, earlier.rec), (1, Rec::of(t(1, 0, 0))));
        // Strided runs (a column) are recorded slot by slot.
        let lane = global_of(64, 4);
        lane.record_run(Run::Write, (2, 8, 6), (t(1, 0, 0), 0, 32), at())
            .unwrap();
        assert_eq!(lane.held(2 + 8 * 5).write.unwrap().0, Rec::of(t(1, 0, 5)));
        assert_eq!(lane.held(3).write, None);
    }

    #[test]
    fn plain_writes_inline_only_what_needs_no_check() {
        let lane = global(8);
        // A first write, and the same thread again: recorded inline.
        assert!(lane.plain_write(0, t(1, 0, 2), at()));
        assert!(lane.plain_write(0, t(1, 0, 2), at()));
        assert_eq!(
            lane.held(0).write.map(|(r, _)| r),
            Some(Rec::of(t(1, 0, 2)))
        );
        // Another thread, even an ordered one, is left to the full check.
        assert!(!lane.plain_write(0, t(1, 1, 3), at()));
        assert!(!lane.plain_write(0, t(2, 0, 2), at()));
        // Once the worker has read the array, every write is checked against the reads.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Read).unwrap();
        assert!(!lane.plain_write(0, t(1, 0, 0), at()));
        // After an atomic, a plain write of the same thread is checked too.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Atomic).unwrap();
        assert!(!lane.plain_write(0, t(1, 0, 0), at()));
        // Shared memory is never written inline, nor a slot outside the lane.
        let mut shared = Lane::shared();
        shared.reset_shared(4, 1).unwrap();
        assert!(!shared.plain_write(0, t(1, 0, 0), at()));
        assert!(!global(8).plain_write(1, t(1, 0, 0), at()));
    }

    #[test]
    fn a_plain_write_then_the_same_threads_atomic_races_another_threads_atomic() {
        let lane = global(8);
        run(&lane, t(1, 0, 0), Write).unwrap();
        run(&lane, t(1, 0, 0), Atomic).unwrap();
        assert!(matches!(
            run(&lane, t(1, 0, 1), Atomic),
            Err(Conflict::Race(Earlier { kind: Write, .. }))
        ));
        // After a barrier the plain write is ordered, and atomics of many threads are not races.
        run(&lane, t(1, 1, 1), Atomic).unwrap();
        run(&lane, t(1, 1, 2), Atomic).unwrap();
    }

    #[test]
    fn a_grid_barrier_orders_other_blocks_accesses_before_it() {
        // Phase 1 of a cooperative launch starts at interval 4: block 1's write in interval 3
        // (phase 0) is ordered before block 2's accesses, block 2's read in phase 1 is not
        // ordered with block 3's write in phase 1.
        let in_phase = |block, interval, thread| Who {
            phase: 4,
            ..t(block, interval, thread)
        };
        let lane = global(8);
        run(&lane, t(1, 3, 0), Write).unwrap();
        run(&lane, in_phase(2, 4, 0), Read).unwrap();
        run(&lane, in_phase(2, 5, 0), Write).unwrap();
        match run(&lane, in_phase(3, 4, 0), Write) {
            Err(Conflict::Race(e)) => assert_eq!(e.rec.block(), 2),
            other => panic!("{other:?}"),
        }
        // Without the grid barrier, the same accesses race.
        let lane = global(8);
        run(&lane, t(1, 3, 0), Write).unwrap();
        run(&lane, t(2, 4, 0), Read).unwrap_err();
        // Reads of two blocks in phase 0, then a write of one of them in phase 1: ordered.
        let lane = global(8);
        run(&lane, t(0, 0, 31), Read).unwrap();
        run(&lane, t(1, 0, 0), Read).unwrap();
        run(&lane, in_phase(1, 4, 0), Write).unwrap();
        run(&lane, in_phase(0, 4, 1), Read).unwrap_err();
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
        let lane = global(8);
        // One thread, then the next interval's threads.
        run(&lane, t(1, 0, 3), Write).unwrap();
        run(&lane, t(1, 0, 3), Read).unwrap();
        run(&lane, t(1, 1, 4), Read).unwrap();
        run(&lane, t(1, 1, 5), Read).unwrap();
        run(&lane, t(1, 2, 6), Write).unwrap();
        // Atomics of many threads and blocks, then a plain read after a barrier is a race only
        // when other blocks took part.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Atomic).unwrap();
        run(&lane, t(1, 0, 1), Atomic).unwrap();
        run(&lane, t(1, 1, 2), Read).unwrap();
        run(&lane, t(2, 0, 0), Atomic).unwrap_err();
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
            let lane = global(8);
            run(&lane, a.0, a.1).unwrap();
            match run(&lane, b.0, b.1) {
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
    fn read_summaries_follow_threads_and_intervals() {
        // Two readers of one interval, in either order, then a write by one: the other races.
        for (first, second) in [(0, 1), (1, 0)] {
            let lane = global(8);
            run(&lane, t(1, 0, first), Read).unwrap();
            run(&lane, t(1, 0, second), Read).unwrap();
            assert!(
                matches!(run(&lane, t(1, 0, 0), Write), Err(Conflict::Race(e)) if e.rec.thread() == 1),
                "readers {first}, {second}"
            );
        }
        // One thread reading twice is one reader: its own write follows.
        let lane = global(8);
        run(&lane, t(1, 0, 2), Read).unwrap();
        run(&lane, t(1, 0, 2), Read).unwrap();
        run(&lane, t(1, 0, 2), Write).unwrap();
        // A read of an earlier interval is ordered by the barrier: a write of this interval
        // by the reader of this one follows both.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Read).unwrap();
        run(&lane, t(1, 1, 1), Read).unwrap();
        run(&lane, t(1, 1, 1), Write).unwrap();
    }

    #[test]
    fn atomics_of_two_threads_then_a_plain_read_race() {
        // The read is ordered with its own thread's atomic, not with the other's.
        for reader in [0, 1, 2] {
            let lane = global(8);
            run(&lane, t(1, 0, 0), Atomic).unwrap();
            run(&lane, t(1, 0, 1), Atomic).unwrap();
            assert!(
                matches!(run(&lane, t(1, 0, reader), Read), Err(Conflict::Race(_))),
                "reader {reader}"
            );
        }
        // After a barrier, the block's atomics are ordered with the read.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Atomic).unwrap();
        run(&lane, t(1, 0, 1), Atomic).unwrap();
        run(&lane, t(1, 1, 0), Read).unwrap();
    }

    #[test]
    fn a_record_of_the_next_launchs_first_block_is_not_this_ones() {
        // Launches numbered side by side share lanes: blocks 9..=16, then blocks 1..=8.
        let mut lane = Lane::new(Scope::Global);
        lane.for_launch(1, 9, 9, 8).unwrap();
        run(&lane, t(9, 0, 0), Write).unwrap();
        lane.for_launch(1, 1, 1, 8).unwrap();
        run(&lane, t(1, 0, 0), Read).unwrap();
        run(&lane, t(8, 0, 0), Read).unwrap();
        // The last block of the launch is its own.
        run(&lane, t(8, 0, 1), Write).unwrap_err();
    }

    #[test]
    fn summaries_keep_a_witness_that_is_not_ordered() {
        // Two readers of one interval, then one of them writes: the other is named.
        let lane = global(8);
        run(&lane, t(1, 0, 0), Read).unwrap();
        run(&lane, t(1, 0, 1), Read).unwrap();
        let Err(Conflict::Race(e)) = run(&lane, t(1, 0, 0), Write) else {
            panic!()
        };
        assert_eq!(e.rec.thread(), 1);
        // Readers in two blocks, then a write by the second: the first block is named.
        let lane = global(8);
        run(&lane, t(1, 0, 4), Read).unwrap();
        run(&lane, t(2, 0, 0), Read).unwrap();
        run(&lane, t(2, 1, 0), Read).unwrap();
        let Err(Conflict::Race(e)) = run(&lane, t(2, 1, 0), Write) else {
            panic!()
        };
        assert_eq!((e.rec.block(), e.rec.thread()), (1, 4));
    }

    #[test]
    fn shared_memory_reads_need_a_write_of_the_block() {
        let mut lane = Lane::shared();
        lane.reset_shared(4, 1).unwrap();
        assert!(matches!(
            run(&lane, t(1, 0, 0), Read),
            Err(Conflict::Uninitialized)
        ));
        run(&lane, t(1, 0, 0), Write).unwrap();
        run(&lane, t(1, 1, 1), Read).unwrap();
        // A record of another block is stale: that block had its own shared memory.
        assert!(matches!(
            run(&lane, t(2, 0, 0), Atomic),
            Err(Conflict::Uninitialized)
        ));
    }

    /// A warp of a block with warp clocks, which the tests pass `syncwarp`s to.
    struct Warp(Vec<clock::WarpClock>);

    impl Warp {
        fn new() -> Warp {
            Warp((0..32).map(clock::start).collect())
        }
        /// Thread `thread` of block 1 in interval `interval`, its clock made the running one.
        fn who(&self, interval: u32, thread: u32) -> Who {
            let clock = &self.0[thread as usize % 32];
            clock::set_current(clock);
            Who {
                epoch: clock[thread as usize % 32],
                ..t(1, interval, thread)
            }
        }
        fn sync(&mut self, mask: u32) {
            clock::join(&mut self.0, mask);
        }
    }

    /// The thread an access raced with.
    fn raced(r: Result<(), Conflict>) -> u32 {
        match r {
            Err(Conflict::Race(e)) => e.rec.thread(),
            other => panic!("expected a race: {other:?}"),
        }
    }

    #[test]
    fn syncwarp_orders_the_lanes_of_its_mask() {
        let fresh = |shared: bool| {
            if shared {
                let mut lane = Lane::shared();
                lane.reset_shared(1, 1).unwrap();
                lane
            } else {
                global(8)
            }
        };
        for shared in [false, true] {
            let lane = fresh(shared);
            let mut w = Warp::new();
            run(&lane, w.who(0, 0), Write).unwrap();
            assert_eq!(raced(run(&lane, w.who(0, 1), Read)), 0, "no syncwarp yet");
            let lane = fresh(shared);
            run(&lane, w.who(0, 0), Write).unwrap();
            w.sync(u32::MAX);
            // Lanes 1 and 2 read after the syncwarp, then lane 0 writes with none between.
            run(&lane, w.who(0, 1), Read).unwrap();
            run(&lane, w.who(0, 2), Read).unwrap();
            assert_eq!(raced(run(&lane, w.who(0, 0), Write)), 1);
        }
    }

    #[test]
    fn syncwarp_orders_every_reader_before_a_later_write() {
        let lane = global(8);
        let mut w = Warp::new();
        run(&lane, w.who(0, 0), Write).unwrap();
        let all_read = |w: &mut Warp| {
            w.sync(u32::MAX);
            for reader in 1..32 {
                run(&lane, w.who(0, reader), Read).unwrap();
            }
        };
        all_read(&mut w);
        w.sync(u32::MAX);
        run(&lane, w.who(0, 0), Write).unwrap();
        // Once more, with lane 7 reading after the second syncwarp: the third write races
        // with it alone.
        all_read(&mut w);
        w.sync(!(1 << 7));
        run(&lane, w.who(0, 7), Read).unwrap();
        assert_eq!(raced(run(&lane, w.who(0, 0), Write)), 7);
        // A barrier orders them all.
        run(&lane, w.who(1, 0), Write).unwrap();
    }

    #[test]
    fn a_half_warp_syncwarp_orders_its_half_only() {
        let lane = global(8);
        let mut w = Warp::new();
        run(&lane, w.who(0, 15), Write).unwrap();
        w.sync(0x0000_ffff);
        w.sync(0xffff_0000);
        run(&lane, w.who(0, 3), Read).unwrap();
        assert_eq!(raced(run(&lane, w.who(0, 16), Read)), 15);
    }

    #[test]
    fn a_reader_of_another_warp_is_never_ordered_by_syncwarp() {
        let lane = global(8);
        let mut w = Warp::new();
        run(&lane, w.who(0, 0), Read).unwrap();
        run(&lane, w.who(0, 40), Read).unwrap();
        w.sync(u32::MAX);
        assert_eq!(raced(run(&lane, w.who(0, 1), Write)), 40);
        let lane = global(8);
        run(&lane, w.who(0, 0), Read).unwrap();
        run(&lane, w.who(0, 1), Read).unwrap();
        assert_eq!(raced(run(&lane, w.who(0, 33), Atomic)), 0);
    }

    #[test]
    fn atomics_of_a_warp_then_syncwarp_order_a_plain_read() {
        let lane = global(8);
        let mut w = Warp::new();
        for l in 0..4 {
            run(&lane, w.who(0, l), Atomic).unwrap();
        }
        assert_eq!(raced(run(&lane, w.who(0, 0), Read)), 1);
        let lane = global(8);
        for l in 0..4 {
            run(&lane, w.who(0, l), Atomic).unwrap();
        }
        w.sync(0b1111);
        run(&lane, w.who(0, 0), Read).unwrap();
        w.sync(0b1111);
        run(&lane, w.who(0, 3), Atomic).unwrap();
        assert_eq!(raced(run(&lane, w.who(0, 2), Read)), 3);
    }

    #[test]
    fn neighbouring_elements_keep_groups_of_their_own() {
        let mut lane = Lane::new(Scope::Global);
        lane.for_launch(4, 1, 1, 8).unwrap();
        let mut w = Warp::new();
        // Lanes 0 and 1 add to element 0, lanes 2 and 3 to element 1, each pair in a group of
        // its own; a syncwarp orders lanes 0 and 1 only.
        for (slot, l) in [(0, 0), (0, 1), (1, 2), (1, 3)] {
            run_at(&lane, slot, w.who(0, l), Atomic).unwrap();
        }
        w.sync(0b0011);
        // Element 0's atomics are ordered with lane 0's read; element 1's with none of its
        // readers: neither read is mistaken for the other element's.
        run_at(&lane, 0, w.who(0, 0), Read).unwrap();
        assert!(matches!(raced(run_at(&lane, 1, w.who(0, 1), Read)), 2 | 3));
        // Reads of one element and writes of the next are told apart too.
        run_at(&lane, 2, w.who(0, 0), Read).unwrap();
        run_at(&lane, 2, w.who(0, 1), Read).unwrap();
        run_at(&lane, 3, w.who(0, 2), Atomic).unwrap();
        run_at(&lane, 3, w.who(0, 3), Atomic).unwrap();
        w.sync(0b0011);
        assert_eq!(raced(run_at(&lane, 2, w.who(0, 2), Write)), 0);
    }

    #[test]
    fn a_lane_holds_this_launchs_last_write_and_read() {
        let lane = global(8);
        assert!(!lane.touched(0));
        run(&lane, t(3, 0, 0), Atomic).unwrap();
        run(&lane, t(4, 0, 2), Atomic).unwrap();
        let held = lane.held(0);
        let (w, _) = held.write.unwrap();
        assert_eq!((w.block(), w.thread(), w.write_kind()), (4, 2, Atomic));
        assert!(w.has(MANY_BLOCKS) && !w.writes_race(Rec::of(t(5, 0, 0)).with(ATOMIC, true)));
        assert!(held.read.is_none() && lane.touched(0));
    }
}
