//! Stream ordering by bytes: which streams of a GPU used which bytes of an array since they
//! were last written, so that work on one stream waits only for the work of other streams it
//! conflicts with.
//!
//! Every GPU array (and page-locked host array) carries its [`Users`]: each use of its memory
//! by a stream since the host last waited for it, with the bytes the use touched (a [`Span`]:
//! the whole array, a view's rows, a copy's range). An operation on a stream that reads bytes
//! waits for the streams that wrote any of them; one that writes waits for every stream that
//! used any of them. The wait is an event recorded on the other stream when the operation is
//! queued, so it covers the conflicting work and whatever that stream queued before it. Work
//! that touches no common byte is never ordered, so chunks of one array copied in, computed and
//! copied out on several streams overlap (CUDA's classic pattern); work that does is never
//! unordered, so safe code cannot race two streams on one array.
//!
//! The record of an array is short: a write forgets the uses it covers (the write is ordered
//! after them, and whatever comes after the write after it), and past [`MAX_USES`] uses, a
//! stream's reads, and its writes, merge into the range that holds them all, which orders
//! later work more than needed but never less.

use cudarc::driver::{sys, CudaStream, DriverError};
use std::sync::{Arc, Mutex};

/// How an operation uses an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// The uses an array's record keeps apart before it merges them by stream.
pub(crate) const MAX_USES: usize = 32;

/// Bytes `start..end` of an address space (a GPU's, or the host's for page-locked memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bytes {
    start: u64,
    end: u64,
}

impl Bytes {
    /// Every byte: a use whose range is not known.
    pub(crate) const ALL: Bytes = Bytes {
        start: 0,
        end: u64::MAX,
    };

    /// The bytes of `len` elements of `T` from `addr`.
    pub(crate) fn elements<T>(addr: u64, len: usize) -> Bytes {
        Bytes::at(addr, len * std::mem::size_of::<T>())
    }

    /// The `len` bytes from `addr`.
    pub(crate) fn at(addr: u64, len: usize) -> Bytes {
        Bytes {
            start: addr,
            end: addr.saturating_add(len as u64),
        }
    }

    fn overlaps(self, other: Bytes) -> bool {
        self.start < other.end && other.start < self.end
    }

    fn covers(self, other: Bytes) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    fn hull(self, other: Bytes) -> Bytes {
        Bytes {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// The bytes of an array that one operation uses, with the array's record.
#[derive(Clone, Copy)]
pub(crate) struct Span<'a> {
    pub(crate) users: &'a Users,
    pub(crate) bytes: Bytes,
}

/// One array's use by an operation: its bytes, and how.
pub(crate) type Use<'a> = (Span<'a>, Access);

/// The streams that used one array since the host last waited for them (see the module doc).
#[derive(Default)]
pub(crate) struct Users(Mutex<Record<Arc<CudaStream>>>);

impl Users {
    /// All of the array's bytes.
    pub(crate) fn whole(&self) -> Span<'_> {
        self.span(Bytes::ALL)
    }

    /// The array's bytes `bytes`.
    pub(crate) fn span(&self, bytes: Bytes) -> Span<'_> {
        Span { users: self, bytes }
    }

    /// Records a use `access` of `bytes` on `on`, and gives the other streams whose uses it
    /// conflicts with: `on` must [`join`] them before the use.
    pub(crate) fn record(
        &self,
        on: &Arc<CudaStream>,
        access: Access,
        bytes: Bytes,
    ) -> Vec<Arc<CudaStream>> {
        let mut record = self.0.lock().unwrap_or_else(|p| p.into_inner());
        record.enter(on, access, bytes, Arc::ptr_eq)
    }

    /// Waits on the host for the streams that a host use `access` of the memory conflicts
    /// with: the writers for a read, every user for a write. Their uses are forgotten, as the
    /// host has waited for them; a read leaves the reads, since a later write must still wait
    /// for them.
    pub(crate) fn host_wait(&self, access: Access) -> Result<(), DriverError> {
        let mut record = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let streams = record.host(access, Arc::ptr_eq);
        drop(record);
        streams.iter().try_for_each(|stream| stream.synchronize())
    }
}

/// A use of an array's bytes by a stream.
#[derive(Clone, Debug)]
struct Entry<S> {
    stream: S,
    write: bool,
    bytes: Bytes,
}

/// The uses of one array that later work may have to wait for, over streams `S`: the logic of
/// [`Users`], apart from the driver.
#[derive(Debug)]
pub(crate) struct Record<S> {
    uses: Vec<Entry<S>>,
}

impl<S> Default for Record<S> {
    fn default() -> Self {
        Record { uses: Vec::new() }
    }
}

impl<S: Clone> Record<S> {
    /// The streams (other than `on`, each once) whose uses a use `access` of `bytes` on `on`
    /// must follow; records the use.
    fn enter(
        &mut self,
        on: &S,
        access: Access,
        bytes: Bytes,
        same: impl Fn(&S, &S) -> bool,
    ) -> Vec<S> {
        if bytes.start >= bytes.end {
            return Vec::new();
        }
        let write = access == Access::Write;
        let mut waits: Vec<S> = Vec::new();
        for u in &self.uses {
            let conflicts = (u.write || write) && u.bytes.overlaps(bytes);
            if conflicts && !same(&u.stream, on) && !waits.iter().any(|s| same(s, &u.stream)) {
                waits.push(u.stream.clone());
            }
        }
        if write {
            self.uses.retain(|u| !bytes.covers(u.bytes));
        } else if self
            .uses
            .iter()
            .any(|u| same(&u.stream, on) && u.bytes.covers(bytes))
        {
            // A later write that would wait for this read waits for its stream already.
            return waits;
        }
        self.uses.push(Entry {
            stream: on.clone(),
            write,
            bytes,
        });
        if self.uses.len() > MAX_USES {
            self.merge(&same);
        }
        waits
    }

    /// Merges each stream's reads, and its writes, into one use of the range that holds them.
    fn merge(&mut self, same: &impl Fn(&S, &S) -> bool) {
        let mut merged: Vec<Entry<S>> = Vec::new();
        for u in self.uses.drain(..) {
            match merged
                .iter_mut()
                .find(|m| m.write == u.write && same(&m.stream, &u.stream))
            {
                Some(m) => m.bytes = m.bytes.hull(u.bytes),
                None => merged.push(u),
            }
        }
        self.uses = merged;
    }

    /// The streams (each once) a host use `access` must wait for, their conflicting uses
    /// forgotten.
    fn host(&mut self, access: Access, same: impl Fn(&S, &S) -> bool) -> Vec<S> {
        let mut waits: Vec<S> = Vec::new();
        self.uses.retain(|u| {
            let conflicts = u.write || access == Access::Write;
            if conflicts && !waits.iter().any(|s| same(s, &u.stream)) {
                waits.push(u.stream.clone());
            }
            !conflicts
        });
        waits
    }
}

/// Makes `on` wait for the work queued on `other` so far (nothing where they are one stream).
pub(crate) fn join(on: &CudaStream, other: &CudaStream) -> Result<(), DriverError> {
    if std::ptr::eq(on, other) {
        return Ok(());
    }
    let event = other.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
    on.wait(&event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Read, Write};

    fn use_(r: &mut Record<u32>, on: u32, access: Access, start: u64, len: usize) -> Vec<u32> {
        r.enter(&on, access, Bytes::at(start, len), |a, b| a == b)
    }

    #[test]
    fn disjoint_bytes_never_wait_and_overlapping_ones_do() {
        let mut r = Record::default();
        // Chunks of one array, each copied in and computed on a stream of its own.
        assert!(use_(&mut r, 1, Write, 0, 100).is_empty());
        assert!(use_(&mut r, 2, Write, 100, 100).is_empty());
        assert!(use_(&mut r, 1, Read, 0, 100).is_empty());
        assert!(use_(&mut r, 2, Read, 150, 10).is_empty());
        // A read across both chunks waits for both writers; a write of the first for its
        // writer and for that read.
        assert_eq!(use_(&mut r, 3, Read, 50, 100), [1, 2]);
        assert_eq!(use_(&mut r, 4, Write, 0, 60), [1, 3]);
        // The whole array, as an operation of unknown range uses it.
        assert_eq!(r.enter(&5, Write, Bytes::ALL, |a, b| a == b), [1, 2, 3, 4]);
        assert_eq!(r.uses.len(), 1, "a write forgets the uses it covers");
        assert_eq!(use_(&mut r, 5, Read, 7, 1), Vec::<u32>::new());
        // No byte: nothing to order.
        assert!(use_(&mut r, 6, Write, 10, 0).is_empty());
    }

    #[test]
    fn reads_wait_for_writes_alone() {
        let mut r = Record::default();
        assert!(use_(&mut r, 1, Read, 0, 8).is_empty());
        assert!(use_(&mut r, 2, Read, 0, 8).is_empty());
        assert_eq!(use_(&mut r, 3, Write, 4, 8), [1, 2]);
        assert_eq!(use_(&mut r, 1, Read, 0, 8), [3]);
        // A read its stream has covered already adds no use.
        let before = r.uses.len();
        assert!(use_(&mut r, 3, Read, 5, 2).is_empty());
        assert_eq!(r.uses.len(), before);
    }

    #[test]
    fn the_host_waits_for_the_conflicting_streams_once() {
        let mut r = Record::default();
        use_(&mut r, 1, Write, 0, 8);
        use_(&mut r, 1, Write, 16, 8);
        use_(&mut r, 2, Read, 0, 8);
        assert_eq!(r.host(Read, |a, b| a == b), [1]);
        // The read by stream 2 stays for a later write.
        assert_eq!(use_(&mut r, 3, Write, 0, 4), [2]);
        assert_eq!(r.host(Write, |a, b| a == b), [2, 3]);
        assert!(r.uses.is_empty());
    }

    #[test]
    fn a_long_record_merges_by_stream_and_still_orders() {
        let mut r = Record::default();
        for k in 0..100u64 {
            use_(&mut r, (k % 3) as u32, Write, k * 16, 8);
        }
        assert!(r.uses.len() <= MAX_USES);
        // Each chunk's bytes still order a later use after its stream.
        assert_eq!(use_(&mut r, 9, Read, 99 * 16, 1), [0]);
        assert_eq!(use_(&mut r, 9, Read, 98 * 16 + 7, 1), [2]);
        // A byte between the early chunks now waits for the stream whose writes were merged
        // around it: more order than needed, never less.
        assert_eq!(use_(&mut r, 7, Read, 8, 1), [0]);
        let waits = use_(&mut r, 8, Write, 0, 100 * 16);
        assert_eq!(waits.len(), 5, "{waits:?}");
    }
}
