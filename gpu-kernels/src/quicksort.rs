//! quicksort: a parallel quicksort of `u32` keys on the device.
//!
//! Each pass partitions every large segment at once, in parallel, around the segment's pivot:
//! - one block per segment takes the median of a sample of its keys and sets the segment's two
//!   cursors to its ends ([`qs_pivot`]);
//! - blocks take chunks of [`CHUNK`] keys, partition their chunk in shared memory, claim room
//!   for its keys below and above the pivot with one atomic operation on each cursor, and write
//!   them there as two contiguous runs ([`qs_partition`]) into the other of two buffers: passes
//!   alternate between the keys and a scratch array instead of copying back. The keys equal to
//!   the pivot are only counted: the room the cursors leave between them is theirs.
//!
//! The host reads the cursors back: the two parts become the next pass's segments, and the
//! run between them is final. Segments of at most [`SMALL`] keys are finished in one block by a
//! bitonic sort in shared memory ([`qs_sort_small`]), which also brings them back from the
//! scratch array; the equal runs are written with their pivot by [`qs_fill`]. Each kernel reads
//! what its blocks do from a table of `u32`s written by the host, a few per block.

use kernel_runtime::prelude::*;

/// Segments of at most this many keys are sorted in one block, in shared memory.
pub const SMALL: usize = 1024;
/// Threads per block of every quicksort kernel.
pub const QS_THREADS: usize = 256;
/// Keys each thread of a partitioning block reads.
const KEYS_PER_THREAD: usize = 16;
/// Keys each partitioning block takes from its segment.
pub const CHUNK: usize = QS_THREADS * KEYS_PER_THREAD;
/// Threads whose counts one thread adds up in [`qs_partition`]'s block-wide scan.
const SCAN_GROUP: usize = 16;
/// Groups of that scan.
const SCAN_GROUPS: usize = QS_THREADS / SCAN_GROUP;
/// Bits of each of the three counts packed in one `u64` (a block counts at most [`CHUNK`] keys).
const COUNT_BITS: u64 = 21;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Keys sampled from a segment for its pivot.
pub const SAMPLES: usize = 63;
/// Threads per block of [`qs_pivot`].
pub const PIVOT_THREADS: usize = 64;

/// Per block `b`, for the segment `segments[2b]`, `segments[2b + 1]` (start, length): its
/// pivot, the median of [`SAMPLES`] keys spread evenly over it, first and last included, and
/// its two cursors: `state[3b..3b + 3]` = start, end, pivot. Launch [`PIVOT_THREADS`] threads
/// per block.
#[kernel]
pub fn qs_pivot(keys: &[u32], segments: &[u32], state: &mut [u32]) {
    let mut sample = shared_array![u32; SAMPLES];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (start, len) = (segments[2 * b] as usize, segments[2 * b + 1] as usize);
    if t < SAMPLES {
        sample[t] = keys[start + (len - 1) * t / (SAMPLES - 1)];
    }
    sync_threads();
    // The median is the key with SAMPLES / 2 keys before it, ties taken in sample order.
    if t < SAMPLES {
        let v = sample[t];
        let mut rank = 0;
        for i in 0..SAMPLES {
            let u = sample[i];
            if u < v || (u == v && i < t) {
                rank += 1;
            }
        }
        if rank == SAMPLES / 2 {
            state[3 * b] = start as u32;
            state[3 * b + 1] = (start + len) as u32;
            state[3 * b + 2] = v;
        }
    }
}

/// Which part of the partition `v` goes to: 0 below the pivot, 1 equal, 2 above.
#[device]
fn side(v: u32, pivot: u32) -> u64 {
    if v < pivot {
        0
    } else if v == pivot {
        1
    } else {
        2
    }
}

/// The count of part `side` in a word packing the three counts [`COUNT_BITS`] apiece.
#[device]
fn part(packed: u64, side: u64) -> u64 {
    (packed >> (COUNT_BITS * side)) & COUNT_MASK
}

/// Per block `b`, for the chunk `table[3b]`, `table[3b + 1]` (first key, keys) of the segment
/// `s = table[3b + 2]` of `src`: partitions the chunk in shared memory around the segment's
/// pivot `state[3s + 2]`, and writes its keys below the pivot at the segment's lower cursor
/// `state[3s]`, its keys above it just under the upper cursor `state[3s + 1]`, each as one
/// contiguous, coalesced run of `dst`, moving the cursors past them. Keys equal to the pivot
/// are not written. Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_partition(src: &[u32], table: &[u32], state: &mut [u32], dst: &mut [u32]) {
    let mut chunk = shared_array![u32; CHUNK];
    let mut staged = shared_array![u32; CHUNK];
    let mut before = shared_array![u64; QS_THREADS];
    let mut groups = shared_array![u64; SCAN_GROUPS + 1];
    let mut runs = shared_array![u32; 2];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (from, n) = (table[3 * b] as usize, table[3 * b + 1] as usize);
    let segment = table[3 * b + 2] as usize;
    let pivot = state[3 * segment + 2];

    // The chunk, read coalesced into shared memory, and each thread's three counts of the keys
    // it read, packed in one word.
    let mut packed = 0u64;
    if n == CHUNK {
        // A whole chunk: each thread's loads all go out before the first is used (a loop of
        // known length, unrolled), so that enough of them are in flight to keep the memory busy;
        // one at a time, each would wait out the full latency of the one before.
        let mut keys = [0u32; KEYS_PER_THREAD];
        for (r, key) in keys.iter_mut().enumerate() {
            *key = src[from + t + r * QS_THREADS];
        }
        for (r, &v) in keys.iter().enumerate() {
            chunk[t + r * QS_THREADS] = v;
            packed += 1 << (COUNT_BITS * side(v, pivot));
        }
    } else {
        let mut k = t;
        while k < n {
            let v = src[from + k];
            chunk[k] = v;
            packed += 1 << (COUNT_BITS * side(v, pivot));
            k += QS_THREADS;
        }
    }

    // Exclusive scan of the packed counts over the block: one thread per group of threads, then
    // one thread over the groups (three barriers, where a tree would take sixteen).
    before[t] = packed;
    sync_threads();
    if t < SCAN_GROUPS {
        let mut sum = 0u64;
        for i in t * SCAN_GROUP..(t + 1) * SCAN_GROUP {
            let c = before[i];
            before[i] = sum;
            sum += c;
        }
        groups[t] = sum;
    }
    sync_threads();
    if t == 0 {
        let mut sum = 0u64;
        for g in 0..SCAN_GROUPS {
            let c = groups[g];
            groups[g] = sum;
            sum += c;
        }
        groups[SCAN_GROUPS] = sum;
        // The chunk's room in its segment: its below-keys from the lower cursor up, its
        // above-keys under the upper cursor.
        let (below, above) = (part(sum, 0) as u32, part(sum, 2) as u32);
        runs[0] = atomic_add(&state, 3 * segment, below);
        runs[1] = atomic_sub(&state, 3 * segment + 1, above) - above;
    }
    sync_threads();
    let mine = groups[t / SCAN_GROUP] + before[t];
    let total = groups[SCAN_GROUPS];
    let below = part(total, 0) as usize;
    let kept = below + part(total, 2) as usize;

    // The chunk partitioned in shared memory: below, then above.
    let mut at_below = part(mine, 0) as usize;
    let mut at_above = below + part(mine, 2) as usize;
    let mut k = t;
    while k < n {
        let key = chunk[k];
        // The side is chosen by selects, not by a branch on each key: on the CPU backend a
        // branch on random keys is mispredicted half the time. Keys equal to the pivot are rare.
        if key != pivot {
            let below = key < pivot;
            staged[if below { at_below } else { at_above }] = key;
            at_below += usize::from(below);
            at_above += usize::from(!below);
        }
        k += QS_THREADS;
    }
    sync_threads();

    let (o_below, o_above) = (runs[0] as usize, runs[1] as usize - below);
    let mut k = t;
    while k < kept {
        dst[if k < below { o_below + k } else { o_above + k }] = staged[k];
        k += QS_THREADS;
    }
}

/// Per block `b`: writes `table[3b + 2]` to the keys `table[3b]`, `table[3b + 1]` (first key,
/// keys; at most [`CHUNK`]) of `keys`. Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_fill(keys: &mut [u32], table: &[u32]) {
    let b = block_idx().x as usize;
    let (first, n, value) = (
        table[3 * b] as usize,
        table[3 * b + 1] as usize,
        table[3 * b + 2],
    );
    let mut k = first + thread_idx().x as usize;
    while k < first + n {
        keys[k] = value;
        k += QS_THREADS;
    }
}

/// Per block `b`: sorts the segment `table[3b]`, `table[3b + 1]` (start, length; at most
/// [`SMALL`] keys) by a bitonic sort in shared memory, over its length rounded up to a power of
/// two, and writes it to `keys`. The segment is read from `keys`, or from `scratch` where
/// `table[3b + 2]` is not 0. Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_sort_small(keys: &mut [u32], scratch: &[u32], table: &[u32]) {
    let mut s = shared_array![u32; SMALL];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (start, len) = (table[3 * b] as usize, table[3 * b + 1] as usize);
    let in_scratch = table[3 * b + 2] != 0;
    // The network sorts the segment padded to a power of two (the same for the whole block).
    let n = len.clamp(2, SMALL).next_power_of_two();
    // Each thread's keys, padded with the largest key: all its loads go out before the first is
    // used (see the partition's), in a loop of known length.
    let mut mine = [u32::MAX; SMALL / QS_THREADS];
    for (r, key) in mine.iter_mut().enumerate() {
        let k = t + r * QS_THREADS;
        if k < len {
            *key = if in_scratch {
                scratch[start + k]
            } else {
                keys[start + k]
            };
        }
    }
    for (r, &key) in mine.iter().enumerate() {
        let k = t + r * QS_THREADS;
        if k < n {
            s[k] = key;
        }
    }
    sync_threads();
    // The network's positions fit in 32 bits, which halve the instructions of its index
    // arithmetic against `usize`'s 64.
    let (t, n) = (t as u32, n as u32);
    let mut size = 2;
    while size <= n {
        let mut stride = size / 2;
        while stride > 0 {
            let mut idx = t;
            while idx < n / 2 {
                // The `idx`-th pair: blocks of `stride` pairs, each `2 * stride` keys apart.
                let pos = ((idx & !(stride - 1)) << 1) | (idx & (stride - 1));
                let partner = pos + stride;
                let ascending = pos & size == 0;
                let (pos, partner) = (pos as usize, partner as usize);
                let (x, y) = (s[pos], s[partner]);
                // Both keys are stored, swapped or not: no branch on the keys (see the
                // partition's loop); ptxas still makes one of the two stores conditional.
                let swap = (x > y) == ascending;
                s[pos] = if swap { y } else { x };
                s[partner] = if swap { x } else { y };
                idx += QS_THREADS as u32;
            }
            sync_threads();
            stride /= 2;
        }
        size *= 2;
    }
    let mut k = t as usize;
    while k < len {
        keys[start + k] = s[k];
        k += QS_THREADS;
    }
}

/// Where a segment's keys are between passes.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Buffer {
    Keys,
    Scratch,
}

#[cfg(not(target_arch = "nvptx64"))]
impl Buffer {
    fn other(self) -> Buffer {
        match self {
            Buffer::Keys => Buffer::Scratch,
            Buffer::Scratch => Buffer::Keys,
        }
    }
}

/// The host's plan: the segments still to partition, all in one buffer, and what is finished.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Default)]
struct Plan {
    /// Segments longer than [`SMALL`]: (start, length) pairs, [`qs_pivot`]'s table.
    large: Vec<u32>,
    /// Segments of at most [`SMALL`] keys that need sorting or bringing back from the scratch
    /// array: [`qs_sort_small`]'s table.
    small: Vec<u32>,
    /// Chunks of the runs of keys equal to their pivot, with the pivot: [`qs_fill`]'s table.
    equal: Vec<u32>,
}

#[cfg(not(target_arch = "nvptx64"))]
impl Plan {
    /// Files the segment `start`, `len` that now lies in `at`.
    fn segment(&mut self, start: u32, len: u32, at: Buffer) {
        if len as usize > SMALL {
            self.large.extend([start, len]);
        } else if len > 1 || (len == 1 && at == Buffer::Scratch) {
            self.small
                .extend([start, len, u32::from(at == Buffer::Scratch)]);
        }
    }
}

/// Appends one `(first key, keys, tag)` triple per [`CHUNK`] of the run `start`, `len`: the
/// rows of [`qs_partition`]'s table (the tag is the run's segment) and of [`qs_fill`]'s (the
/// tag is the value to write).
#[cfg(not(target_arch = "nvptx64"))]
pub fn push_chunks(table: &mut Vec<u32>, start: u32, len: u32, tag: u32) {
    let chunk = CHUNK as u32;
    for from in (start..start + len).step_by(CHUNK) {
        table.extend([from, chunk.min(start + len - from), tag]);
    }
}

/// Sorts `keys` in place on its device with the kernels above; returns the number of
/// partitioning passes. A pass whose cursors do not split each segment around its pivot is an
/// [`Error::KernelFault`] of `qs_partition`, not an endless
/// sort.
#[cfg(not(target_arch = "nvptx64"))]
pub fn sort(keys: &mut kernel_runtime::DeviceArray1<u32>) -> Result<usize, kernel_runtime::Error> {
    let n = keys.len();
    if n > u32::MAX as usize {
        return Err(kernel_runtime::Error::TooLarge { shape: vec![n] });
    }
    let dev = keys.device().clone();
    // Every buffer below is written before it is read: none is cleared.
    let mut scratch = dev.empty::<u32, _>(if n > SMALL { n } else { 1 })?;
    let mut plan = Plan::default();
    plan.segment(0, n as u32, Buffer::Keys);
    let mut at = Buffer::Keys;
    let mut passes = 0;
    while !plan.large.is_empty() {
        passes += 1;
        let large = std::mem::take(&mut plan.large);
        let segments = large.len() / 2;
        let mut chunks = Vec::new();
        for (i, seg) in large.chunks_exact(2).enumerate() {
            push_chunks(&mut chunks, seg[0], seg[1], i as u32);
        }
        let blocks = chunks.len() / 3;
        let large_d = dev.to_device(&large)?;
        let chunks_d = dev.to_device(&chunks)?;
        let mut state = dev.empty::<u32, _>(3 * segments)?;
        match at {
            Buffer::Keys => {
                qs_pivot.launch(segments, PIVOT_THREADS, (&*keys, &large_d, &mut state))?;
                let args = (&*keys, &chunks_d, &mut state, &mut scratch);
                qs_partition.launch(blocks, QS_THREADS, args)?;
            }
            Buffer::Scratch => {
                qs_pivot.launch(segments, PIVOT_THREADS, (&scratch, &large_d, &mut state))?;
                let args = (&scratch, &chunks_d, &mut state, &mut *keys);
                qs_partition.launch(blocks, QS_THREADS, args)?;
            }
        }
        // Each segment is now, in the other buffer, its keys below the pivot up to the lower
        // cursor, then room for those equal to it, then those above from the upper cursor.
        let state = state.to_vec()?;
        let to = at.other();
        for (seg, cursors) in large.chunks_exact(2).zip(state.chunks_exact(3)) {
            let (start, end) = (seg[0], seg[0] + seg[1]);
            let (lower, upper, pivot) = (cursors[0], cursors[1], cursors[2]);
            // The pivot is one of the segment's keys, so the run of keys equal to it is never
            // empty: every pass shrinks every segment, and the sort ends. Cursors that say
            // otherwise come from kernels that went wrong, and would make it loop forever.
            if !(start <= lower && lower < upper && upper <= end) {
                return Err(kernel_runtime::Error::KernelFault {
                    kernel: "qs_partition",
                    message: format!(
                        "the segment {start}..{end} came back split at {lower}..{upper}, which \
                         is not inside it around at least one key equal to the pivot"
                    ),
                });
            }
            plan.segment(start, lower - start, to);
            push_chunks(&mut plan.equal, lower, upper - lower, pivot);
            plan.segment(upper, end - upper, to);
        }
        at = to;
    }
    if !plan.equal.is_empty() {
        let table_d = dev.to_device(&plan.equal)?;
        qs_fill.launch(plan.equal.len() / 3, QS_THREADS, (&mut *keys, &table_d))?;
    }
    if !plan.small.is_empty() {
        let table_d = dev.to_device(&plan.small)?;
        let blocks = plan.small.len() / 3;
        qs_sort_small.launch(blocks, QS_THREADS, (&mut *keys, &scratch, &table_d))?;
    }
    Ok(passes)
}
