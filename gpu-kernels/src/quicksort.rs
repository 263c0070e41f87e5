//! quicksort: a parallel multi-pivot quicksort of `u32` keys on the device.
//!
//! Each pass splits every large segment at once, in parallel, into up to [`PARTS`] parts:
//! - one block per segment sorts a sample of its keys and takes up to `PARTS - 1` pivots
//!   from it at even ranks ([`qs_pivots`]); the last pivot slot always holds `u32::MAX`;
//! - blocks take chunks of [`CHUNK`] keys and count, in shared memory, how many fall in each
//!   of the segment's [`BUCKETS`] buckets: strictly between two pivots, or equal to one
//!   ([`qs_count`]);
//! - blocks take the same chunks again, order them by bucket in shared memory, claim room in
//!   each bucket of the segment with one atomic operation per bucket, and write each bucket's
//!   keys there as one contiguous, coalesced run ([`qs_scatter`]) into the other of two
//!   buffers: passes alternate between the keys and a scratch array instead of copying back.
//!
//! The host reads the counts back: the buckets between pivots become the next pass's segments,
//! and the buckets of keys equal to a pivot are final. Every pivot is one of the segment's keys,
//! so every bucket between pivots is smaller than its segment and the sort ends. Runs of at
//! most [`SMALL`] keys (neighbouring buckets gathered) are finished in one block by a bitonic
//! sort in shared memory ([`qs_sort_small`]), which also brings them back from the scratch
//! array; longer runs of equal keys left there are copied back by [`qs_copy`]. Each kernel reads
//! what its blocks do from a table of `u32`s written by the host, a few per block.

use kernel_runtime::prelude::*;

/// Segments of at most this many keys are sorted in one block, in shared memory.
pub const SMALL: usize = 1024;
/// Threads per block of the copying and small-sort kernels.
pub const QS_THREADS: usize = 256;
/// Threads per block of the counting and scattering kernels.
pub const SPLIT_THREADS: usize = 512;
/// Keys each thread of a counting or scattering block reads: few enough that the compiler
/// unrolls the loops over them, which keeps them in registers.
const KEYS_PER_THREAD: usize = 8;
/// Keys each counting or scattering block takes from its segment.
pub const CHUNK: usize = SPLIT_THREADS * KEYS_PER_THREAD;
/// The most parts a pass splits a segment into: the pivot slots of a segment, the last of
/// which is always `u32::MAX`.
pub const PARTS: usize = 32;
/// The most buckets of a segment: `2i` holds the keys strictly between pivots `i - 1` and
/// `i`, `2i + 1` those equal to pivot `i`. A segment split into `p` parts has `2p` buckets.
pub const BUCKETS: usize = 2 * PARTS;
/// Keys sampled from a segment for its pivots.
pub const SAMPLES: usize = 127;
/// Threads per block of [`qs_pivots`].
pub const PIVOT_THREADS: usize = SAMPLES + 1;
/// A key's bucket and its rank among the chunk's keys of that bucket, packed: the rank is
/// under [`CHUNK`], below this many bits.
const RANK_BITS: u32 = 16;

/// How many parts a segment of `len` keys (more than [`SMALL`]) is split into, a power of two
/// up to [`PARTS`]: as few as take it, in the fewest passes, to parts of about `SMALL / 2` keys,
/// which a bitonic sort finishes (most are at most `SMALL`). Where those passes could split
/// more ways than they need, the first passes take the extra: 2^26 keys go 32, 16, 16 and 16
/// ways, four passes where 16 ways at most would take five.
#[device]
fn parts(len: usize) -> usize {
    // The power of two of the parts wanted in all, and of the passes at most PARTS ways each.
    let bits = len.div_ceil(SMALL / 2).next_power_of_two().trailing_zeros();
    let passes = bits.div_ceil(PARTS.trailing_zeros()).max(1);
    1 << bits.div_ceil(passes)
}

/// The bucket of `v` among the sorted pivots `pivot(0..PARTS)`, of which the last is
/// `u32::MAX`: `2i` where `i` pivots are below `v` and pivot `i` is above it, `2i + 1` where
/// pivot `i` equals it.
#[device]
fn bucket_of(v: u32, pivot: impl Fn(usize) -> u32) -> usize {
    // The number of pivots below `v`, by bisection: the last one is never below it. In 32 bits,
    // which take half the instructions of `usize`'s 64 on the GPU.
    let mut i = 0u32;
    let mut step = PARTS as u32 / 2;
    while step > 0 {
        if pivot((i + step - 1) as usize) < v {
            i += step;
        }
        step /= 2;
    }
    let i = i as usize;
    2 * i + usize::from(pivot(i) == v)
}

/// Per block `b`, for the segment `segments[3b]`, `segments[3b + 1]` (start, length; longer
/// than [`SMALL`]), split into `p` parts (a power of two up to [`PARTS`], chosen by its length):
/// its pivots `pivots[PARTS b..PARTS (b + 1)]`, keys at even ranks of a sorted sample of
/// [`SAMPLES`] keys spread evenly over it (first and last included), `p - 1` of them, then
/// `u32::MAX`; and its `2p` buckets' counts and cursors (`counts`, `cursors[o..o + 2p]` where
/// `o = segments[3b + 2]`) set to 0. Launch [`PIVOT_THREADS`] threads per block.
#[kernel]
pub fn qs_pivots(
    keys: &[u32],
    segments: &[u32],
    pivots: &mut [u32],
    counts: &mut [u32],
    cursors: &mut [u32],
) {
    let mut sample = shared_array![u32; SAMPLES];
    let mut sorted = shared_array![u32; SAMPLES];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (start, len, base) = table_row(|i| segments[3 * b + i]);
    let parts = parts(len);
    if t < SAMPLES {
        sample[t] = keys[start + (len - 1) * t / (SAMPLES - 1)];
    }
    if t < 2 * parts {
        counts[base + t] = 0;
        cursors[base + t] = 0;
    }
    sync_threads();
    // The sample sorted by rank: the keys below each, ties taken in sample order.
    if t < SAMPLES {
        let v = sample[t];
        let mut rank = 0;
        for i in 0..SAMPLES {
            let u = sample[i];
            rank += usize::from(u < v || (u == v && i < t));
        }
        sorted[rank] = v;
    }
    sync_threads();
    if t < PARTS {
        pivots[PARTS * b + t] = if t + 1 < parts {
            sorted[(t + 1) * PIVOT_THREADS / parts - 1]
        } else {
            u32::MAX
        };
    }
}

/// Per block `b`, for the chunk `chunks[3b]`, `chunks[3b + 1]` (first key, keys) of the
/// segment `s = chunks[3b + 2]` of `src`: adds the number of its keys in each of the segment's
/// buckets (between two pivots, or equal to one) to the segment's counts, from
/// `counts[segments[3s + 2]]` on (see [`qs_pivots`]). Launch [`SPLIT_THREADS`] threads per
/// block.
#[kernel]
pub fn qs_count(src: &[u32], segments: &[u32], chunks: &[u32], pivots: &[u32], counts: &mut [u32]) {
    let mut pivot = shared_array![u32; PARTS];
    let mut tally = shared_array![u32; BUCKETS];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (from, n, segment) = table_row(|i| chunks[3 * b + i]);
    if t < PARTS {
        pivot[t] = pivots[PARTS * segment + t];
    }
    if t < BUCKETS {
        tally[t] = 0;
    }
    let keys = load_chunk(n, t, |k| src[from + k]);
    sync_threads();
    each_key(|r| {
        if t + r * SPLIT_THREADS < n {
            atomic_add(&tally, bucket_of(keys[r], |i| pivot[i]), 1);
        }
    });
    sync_threads();
    if t < BUCKETS {
        let c = tally[t];
        if c > 0 {
            atomic_add(&counts, segments[3 * segment + 2] as usize + t, c);
        }
    }
}

/// Calls `f(r)` for each `r` under [`KEYS_PER_THREAD`], one written-out call each: a loop the
/// compiler might not unroll, and a thread's keys indexed by a variable `r` leave the registers
/// for local memory.
#[device]
fn each_key(mut f: impl FnMut(usize)) {
    const { assert!(KEYS_PER_THREAD == 8) };
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
}

/// A row of three entries of a table, of which `entry(i)` is the `i`-th: `(first key, keys,
/// segment)` of a chunk, or `(start, length, first count)` of a segment.
#[device]
fn table_row(entry: impl Fn(usize) -> u32) -> (usize, usize, usize) {
    (entry(0) as usize, entry(1) as usize, entry(2) as usize)
}

/// The keys `key(t + r SPLIT_THREADS)` of a chunk of `n` keys, for each `r` under
/// [`KEYS_PER_THREAD`] (0 past the end). A whole chunk's loads all go out before the first is
/// used (a loop of known length, unrolled), so that enough of them are in flight to keep the
/// memory busy; one at a time, each would wait out the full latency of the one before.
#[device]
fn load_chunk(n: usize, t: usize, key: impl Fn(usize) -> u32) -> [u32; KEYS_PER_THREAD] {
    let mut keys = [0u32; KEYS_PER_THREAD];
    if n == CHUNK {
        for (r, slot) in keys.iter_mut().enumerate() {
            *slot = key(t + r * SPLIT_THREADS);
        }
    } else {
        for (r, slot) in keys.iter_mut().enumerate() {
            if t + r * SPLIT_THREADS < n {
                *slot = key(t + r * SPLIT_THREADS);
            }
        }
    }
    keys
}

/// Per block `b`, for the chunk `chunks[3b]`, `chunks[3b + 1]` (first key, keys) of the
/// segment `s = chunks[3b + 2]` (start `segments[3s]`) of `src`, after [`qs_count`] has counted
/// all of the segment's chunks: writes each bucket's keys of the chunk to `dst`, as one
/// contiguous, coalesced run in the room of that bucket in the segment, which the bucket's
/// cursor `cursors[segments[3s + 2] + bucket]` (from 0) says how much of is taken. Launch
/// [`SPLIT_THREADS`] threads per block.
#[kernel]
pub fn qs_scatter(
    src: &[u32],
    segments: &[u32],
    chunks: &[u32],
    pivots: &[u32],
    counts: &[u32],
    cursors: &mut [u32],
    dst: &mut [u32],
) {
    let mut pivot = shared_array![u32; PARTS];
    let mut tally = shared_array![u32; BUCKETS];
    let mut totals = shared_array![u32; BUCKETS];
    let mut first = shared_array![u32; BUCKETS];
    let mut offset = shared_array![u32; BUCKETS];
    let mut staged = shared_array![u32; CHUNK];
    let mut staged_bucket = shared_array![u8; CHUNK];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (from, n, segment) = table_row(|i| chunks[3 * b + i]);
    let (start, len, base) = table_row(|i| segments[3 * segment + i]);
    let buckets = 2 * parts(len);
    if t < BUCKETS {
        tally[t] = 0;
    }
    if t < buckets {
        totals[t] = counts[base + t];
    }
    if t < PARTS {
        pivot[t] = pivots[PARTS * segment + t];
    }
    let keys = load_chunk(n, t, |k| src[from + k]);
    sync_threads();

    // Each key's bucket, and its rank among the chunk's keys of that bucket.
    let mut places = [0u32; KEYS_PER_THREAD];
    each_key(|r| {
        if t + r * SPLIT_THREADS < n {
            let bucket = bucket_of(keys[r], |i| pivot[i]);
            places[r] = ((bucket as u32) << RANK_BITS) | atomic_add(&tally, bucket, 1);
        }
    });
    sync_threads();
    // Where each bucket starts in the chunk and in the segment.
    if t == 0 {
        let (mut in_chunk, mut in_segment) = (0, start as u32);
        for k in 0..buckets {
            first[k] = in_chunk;
            offset[k] = in_segment;
            in_chunk += tally[k];
            in_segment += totals[k];
        }
    }
    sync_threads();
    // The chunk's room in each bucket; `offset` becomes where its key `k` (in chunk order) of
    // the bucket goes, less `k`: never below 0, as the segment's buckets before this one hold
    // at least the chunk's keys of them.
    if t < buckets {
        let c = tally[t];
        if c > 0 {
            let taken = atomic_add(&cursors, base + t, c);
            offset[t] = offset[t] + taken - first[t];
        }
    }
    // The chunk ordered by bucket in shared memory, with each key's bucket.
    for (r, &v) in keys.iter().enumerate() {
        if t + r * SPLIT_THREADS < n {
            let (bucket, rank) = (places[r] >> RANK_BITS, places[r] & ((1 << RANK_BITS) - 1));
            let at = (first[bucket as usize] + rank) as usize;
            staged[at] = v;
            staged_bucket[at] = bucket as u8;
        }
    }
    sync_threads();
    let mut k = t;
    while k < n {
        let at = offset[staged_bucket[k] as usize] + k as u32;
        dst[at as usize] = staged[k];
        k += SPLIT_THREADS;
    }
}

/// `x` and `y` in order: ascending, or descending. Both come back, swapped or not: no branch on
/// the keys, which the CPU backend would mispredict half the time on random keys.
#[device]
fn ordered(x: u32, y: u32, ascending: bool) -> (u32, u32) {
    let (low, high) = (x.min(y), x.max(y));
    if ascending {
        (low, high)
    } else {
        (high, low)
    }
}

/// Per block `b`: copies the keys `table[3b]`, `table[3b + 1]` (first key, keys; at most
/// [`CHUNK`]) of `scratch` to `keys`. Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_copy(keys: &mut [u32], scratch: &[u32], table: &[u32]) {
    let b = block_idx().x as usize;
    let (first, n) = (table[3 * b] as usize, table[3 * b + 1] as usize);
    let mut k = first + thread_idx().x as usize;
    while k < first + n {
        keys[k] = scratch[k];
        k += QS_THREADS;
    }
}

/// Per block `b`: sorts the segment `table[3b]`, `table[3b + 1]` (start, length; at most
/// [`SMALL`] keys) by a bitonic sort in shared memory, over its length rounded up to a power of
/// two (at least 4), two stages of the network to a pass over shared memory, and writes it to
/// `keys`. The segment is read from `keys`, or from `scratch` where
/// `table[3b + 2]` is not 0. Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_sort_small(keys: &mut [u32], scratch: &[u32], table: &[u32]) {
    let mut s = shared_array![u32; SMALL];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (start, len) = (table[3 * b] as usize, table[3 * b + 1] as usize);
    let in_scratch = table[3 * b + 2] != 0;
    // The network sorts the segment padded to a power of two (the same for the whole block).
    let n = len.clamp(4, SMALL).next_power_of_two();
    // Each thread's keys, padded with the largest key: all its loads go out before the first is
    // used (see [`load_chunk`]), in a loop of known length.
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
        // The phase's strides, `size / 2` down to 1, two to a pass over shared memory: each
        // thread reads four keys closed under both, and writes them back after both stages.
        // Where the strides left are odd in number, the first goes alone, two pairs a thread.
        let mut stride = size / 2;
        while stride > 0 {
            let two = stride.trailing_zeros() % 2 == 1;
            let mut group = t;
            while group < n / 4 {
                if two {
                    // Four keys `half` apart in pairs `stride` apart: `group` with two zero
                    // bits put in at `half` and `stride`.
                    let half = stride / 2;
                    let a = ((group & !(half - 1)) << 2) | (group & (half - 1));
                    let ascending = a & size == 0;
                    let (a, b) = (a as usize, (a + half) as usize);
                    let (c, d) = ((a as u32 + stride) as usize, (b as u32 + stride) as usize);
                    let (w, y) = ordered(s[a], s[c], ascending);
                    let (x, z) = ordered(s[b], s[d], ascending);
                    (s[a], s[b]) = ordered(w, x, ascending);
                    (s[c], s[d]) = ordered(y, z, ascending);
                } else {
                    // The pairs `group` and `group + n / 4` of the stage: blocks of `stride`
                    // pairs, each `2 * stride` keys apart.
                    for pair in [group, group + n / 4] {
                        let a = ((pair & !(stride - 1)) << 1) | (pair & (stride - 1));
                        let (a, b) = (a as usize, (a + stride) as usize);
                        (s[a], s[b]) = ordered(s[a], s[b], a as u32 & size == 0);
                    }
                }
                group += QS_THREADS as u32;
            }
            sync_threads();
            stride /= if two { 4 } else { 2 };
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

/// The host's plan: the segments still to split, all in one buffer, and what is finished.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Default)]
struct Plan {
    /// Segments longer than [`SMALL`]: (start, length) pairs, [`qs_pivots`]' table.
    large: Vec<u32>,
    /// Runs of at most [`SMALL`] keys that need sorting or bringing back from the scratch
    /// array: [`qs_sort_small`]'s table.
    small: Vec<u32>,
    /// Chunks of the longer runs of equal keys left in the scratch array: [`qs_copy`]'s table.
    copy: Vec<u32>,
}

#[cfg(not(target_arch = "nvptx64"))]
impl Plan {
    /// Files the segment `start`, `len` that now lies in `at`, still to sort.
    fn segment(&mut self, start: u32, len: u32, at: Buffer) {
        if len as usize > SMALL {
            self.large.extend([start, len]);
        } else {
            self.small_run(start, len, at);
        }
    }

    /// Files the run `start`, `len` (at most [`SMALL`] keys) that lies in `at`, to be sorted.
    fn small_run(&mut self, start: u32, len: u32, at: Buffer) {
        if len > 1 || (len == 1 && at == Buffer::Scratch) {
            self.small
                .extend([start, len, u32::from(at == Buffer::Scratch)]);
        }
    }

    /// Files the buckets `lens` of the segment that starts at `start` and was split into `at`,
    /// in order: those longer than [`SMALL`] and between pivots as segments, the rest gathered
    /// into runs to sort in one block (a run of neighbouring buckets sorted is sorted; see
    /// [`gathers`]), and the equal keys of longer buckets as final.
    fn buckets(&mut self, start: u32, lens: &[u32], at: Buffer) {
        let (mut run, mut run_len) = (start, 0);
        let mut next = start;
        for (bucket, &len) in lens.iter().enumerate() {
            if !gathers(run_len as usize, len as usize) {
                self.small_run(run, run_len, at);
                (run, run_len) = (next, 0);
            }
            if len as usize <= SMALL {
                run_len += len;
            } else {
                // Between pivots: a segment; equal to one: final, where it lies in the keys.
                if bucket % 2 == 0 {
                    self.large.extend([next, len]);
                } else if at == Buffer::Scratch {
                    push_chunks(&mut self.copy, next, len, 0);
                }
                run = next + len;
            }
            next += len;
        }
        self.small_run(run, run_len, at);
    }
}

/// Whether a run of `run` keys to sort in one block takes in the next bucket, of `len` keys: where
/// the two together are at most [`SMALL`] keys and their bitonic network is no longer than the
/// longer one's alone (or than that of [`GATHERED`] keys): a longer network costs more than the
/// block it saves.
#[cfg(not(target_arch = "nvptx64"))]
fn gathers(run: usize, len: usize) -> bool {
    let both = run + len;
    both <= SMALL && both.next_power_of_two() <= run.max(len).max(GATHERED).next_power_of_two()
}

/// Runs up to this many keys take in any bucket that fits (see [`gathers`]).
#[cfg(not(target_arch = "nvptx64"))]
const GATHERED: usize = 64;

/// One splitting pass over a list of segments: its tables and counters on the device, and its
/// three kernels ([`qs_pivots`], [`qs_count`], [`qs_scatter`]).
#[cfg(not(target_arch = "nvptx64"))]
pub struct SplitPass {
    segments: kernel_runtime::DeviceArray1<u32>,
    chunks: kernel_runtime::DeviceArray1<u32>,
    pivots: kernel_runtime::DeviceArray1<u32>,
    counts: kernel_runtime::DeviceArray1<u32>,
    cursors: kernel_runtime::DeviceArray1<u32>,
}

#[cfg(not(target_arch = "nvptx64"))]
impl SplitPass {
    /// The pass over the segments `large`, (start, length) pairs of more than [`SMALL`] keys.
    pub fn new(
        dev: &kernel_runtime::Device,
        large: &[u32],
    ) -> Result<SplitPass, kernel_runtime::Error> {
        let segments = large.len() / 2;
        // Each segment's (start, length, first count), its buckets' counts packed one segment
        // after the other, and its chunks.
        let (mut table, mut chunks) = (Vec::with_capacity(3 * segments), Vec::new());
        let mut buckets = 0;
        for (i, seg) in large.chunks_exact(2).enumerate() {
            table.extend([seg[0], seg[1], buckets as u32]);
            buckets += 2 * parts(seg[1] as usize);
            push_chunks(&mut chunks, seg[0], seg[1], i as u32);
        }
        // The counters are cleared by the pivot kernel, on every launch.
        Ok(SplitPass {
            segments: dev.to_device(&table)?,
            chunks: dev.to_device(&chunks)?,
            pivots: dev.empty::<u32, _>(PARTS * segments)?,
            counts: dev.empty::<u32, _>(buckets)?,
            cursors: dev.empty::<u32, _>(buckets)?,
        })
    }

    /// Splits the segments of `src` into `dst`, each bucket of a segment after the one before.
    pub fn launch(
        &mut self,
        src: &kernel_runtime::DeviceArray1<u32>,
        dst: &mut kernel_runtime::DeviceArray1<u32>,
    ) -> Result<(), kernel_runtime::Error> {
        let (segments, blocks) = (self.segments.len() / 3, self.chunks.len() / 3);
        let args = (
            src,
            &self.segments,
            &mut self.pivots,
            &mut self.counts,
            &mut self.cursors,
        );
        qs_pivots.launch(segments, PIVOT_THREADS, args)?;
        let args = (
            src,
            &self.segments,
            &self.chunks,
            &self.pivots,
            &mut self.counts,
        );
        qs_count.launch(blocks, SPLIT_THREADS, args)?;
        let args = (
            src,
            &self.segments,
            &self.chunks,
            &self.pivots,
            &self.counts,
            &mut self.cursors,
            dst,
        );
        qs_scatter.launch(blocks, SPLIT_THREADS, args)?;
        Ok(())
    }

    /// The buckets' counts, read back once the pass has run: those of each segment in turn,
    /// two per part.
    fn counts(&self) -> Result<Vec<u32>, kernel_runtime::Error> {
        self.counts.to_vec()
    }
}

/// Appends one `(first key, keys, tag)` triple per [`CHUNK`] of the run `start`, `len`: the
/// rows of [`qs_count`]'s and [`qs_scatter`]'s table (the tag is the run's segment) and of
/// [`qs_copy`]'s (the tag is not read).
#[cfg(not(target_arch = "nvptx64"))]
fn push_chunks(table: &mut Vec<u32>, start: u32, len: u32, tag: u32) {
    let chunk = CHUNK as u32;
    for from in (start..start + len).step_by(CHUNK) {
        table.extend([from, chunk.min(start + len - from), tag]);
    }
}

/// Checks that `counts` split the segment `start`, `len` into buckets that add up to it, each
/// between pivots smaller than it: counts that say otherwise come from kernels that went
/// wrong, and would make the sort loop forever.
#[cfg(not(target_arch = "nvptx64"))]
fn check_split(start: u32, len: u32, counts: &[u32]) -> Result<(), kernel_runtime::Error> {
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let shrinks = counts.iter().step_by(2).all(|&c| c < len);
    if total == u64::from(len) && shrinks {
        return Ok(());
    }
    let end = u64::from(start) + u64::from(len);
    Err(kernel_runtime::Error::KernelFault {
        kernel: "qs_count",
        message: format!(
            "the segment {start}..{end} came back split into buckets of {counts:?} keys, which \
             do not add up to it, or leave no key equal to a pivot"
        ),
    })
}

/// Sorts `keys` in place on its device with the kernels above; returns the number of
/// splitting passes. A pass whose counts do not split each segment into smaller parts is an
/// [`Error::KernelFault`] of `qs_count`, not an endless sort.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let dev = Device::cpu();
/// let mut keys = dev.to_device(&(0..5000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect::<Vec<_>>())?;
/// gpu_kernels::quicksort::sort(&mut keys)?;
/// let sorted = keys.to_vec()?;
/// assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
/// # Ok(())
/// # }
/// ```
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
        let mut pass = SplitPass::new(&dev, &large)?;
        match at {
            Buffer::Keys => pass.launch(keys, &mut scratch)?,
            Buffer::Scratch => pass.launch(&scratch, keys)?,
        }
        // Each segment is now, in the other buffer, its buckets in order.
        let counts = pass.counts()?;
        let to = at.other();
        let mut lens = counts.as_slice();
        for seg in large.chunks_exact(2) {
            let (this, rest) = lens.split_at(2 * parts(seg[1] as usize));
            check_split(seg[0], seg[1], this)?;
            plan.buckets(seg[0], this, to);
            lens = rest;
        }
        at = to;
    }
    if !plan.copy.is_empty() {
        let table_d = dev.to_device(&plan.copy)?;
        qs_copy.launch(
            plan.copy.len() / 3,
            QS_THREADS,
            (&mut *keys, &scratch, &table_d),
        )?;
    }
    if !plan.small.is_empty() {
        let table_d = dev.to_device(&plan.small)?;
        let blocks = plan.small.len() / 3;
        qs_sort_small.launch(blocks, QS_THREADS, (&mut *keys, &scratch, &table_d))?;
    }
    Ok(passes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buckets of one segment: `lens` padded with empty buckets.
    fn buckets(lens: &[u32]) -> Vec<u32> {
        let mut all = vec![0; BUCKETS];
        all[..lens.len()].copy_from_slice(lens);
        all
    }

    #[test]
    fn small_buckets_are_gathered_where_their_sort_grows_no_longer() {
        let mut plan = Plan::default();
        plan.buckets(100, &buckets(&[300, 1, 300, 1, 500]), Buffer::Scratch);
        assert_eq!(plan.small, [100, 301, 1, 401, 301, 1, 702, 500, 1]);
        assert!(plan.large.is_empty() && plan.copy.is_empty());
        // Tiny buckets gather up to a network of GATHERED keys, and runs to SMALL at most.
        let mut plan = Plan::default();
        plan.buckets(
            0,
            &buckets(&[3, 1, 3, 1, 50, 1, 1000, 23, 2]),
            Buffer::Scratch,
        );
        assert_eq!(plan.small, [0, 59, 1, 59, 1023, 1, 1082, 2, 1]);
        assert!(gathers(0, SMALL) && !gathers(1, SMALL) && gathers(GATHERED / 2, GATHERED / 2));
    }

    #[test]
    fn long_buckets_between_pivots_are_segments_and_split_the_runs() {
        let mut plan = Plan::default();
        plan.buckets(0, &buckets(&[10, 1, 5000, 1, 0, 1, 9]), Buffer::Keys);
        assert_eq!(plan.large, [11, 5000]);
        assert_eq!(plan.small, [0, 11, 0, 5011, 11, 0]);
        assert!(plan.copy.is_empty());
    }

    #[test]
    fn long_runs_of_equal_keys_are_final_and_copied_back_from_scratch() {
        let long = (CHUNK + 5) as u32;
        let lens = buckets(&[3, long, 2]);
        let mut plan = Plan::default();
        plan.buckets(7, &lens, Buffer::Keys);
        assert!(plan.large.is_empty() && plan.copy.is_empty());
        assert_eq!(plan.small, [7, 3, 0, 10 + long, 2, 0]);

        let mut plan = Plan::default();
        plan.buckets(7, &lens, Buffer::Scratch);
        assert_eq!(plan.copy, [10, CHUNK as u32, 0, 10 + CHUNK as u32, 5, 0]);
        assert_eq!(plan.small, [7, 3, 1, 10 + long, 2, 1]);
    }

    #[test]
    fn single_keys_are_filed_only_where_they_must_move() {
        let mut plan = Plan::default();
        plan.buckets(0, &buckets(&[0, 1]), Buffer::Keys);
        assert!(plan.small.is_empty());
        plan.buckets(0, &buckets(&[0, 1]), Buffer::Scratch);
        assert_eq!(plan.small, [0, 1, 1]);
    }

    #[test]
    fn a_split_must_add_up_and_shrink_every_part() {
        assert!(check_split(5, 10, &buckets(&[4, 1, 5])).is_ok());
        // Short of the segment, or all of it in one bucket between pivots.
        for lens in [buckets(&[4, 1, 4]), buckets(&[10])] {
            match check_split(5, 10, &lens) {
                Err(kernel_runtime::Error::KernelFault { kernel, message }) => {
                    assert_eq!(kernel, "qs_count");
                    assert!(message.contains("segment 5..15"), "{message}");
                }
                other => panic!("expected a fault, got {other:?}"),
            }
        }
    }

    #[test]
    fn parts_take_segments_to_half_a_small_one_in_the_fewest_passes() {
        assert_eq!(parts(SMALL + 1), 4);
        assert_eq!(parts(4 * SMALL), 8);
        assert_eq!(parts(16 * SMALL), PARTS);
        // 2^26 keys: 2^17 parts of SMALL / 2, in four passes of 32, 16, 16 and 16 ways.
        let mut len = 1 << 26;
        let mut ways = Vec::new();
        while len > SMALL {
            ways.push(parts(len));
            len /= parts(len);
        }
        assert_eq!(ways, [32, 16, 16, 16]);
        assert_eq!(len, SMALL / 2);
        // Always a power of two, up to PARTS.
        for len in [SMALL + 1, 3 << 20, 1 << 30, u32::MAX as usize] {
            assert!(parts(len) <= PARTS && parts(len).is_power_of_two());
        }
    }

    #[test]
    fn buckets_hold_keys_between_pivots_and_equal_to_them() {
        // 10, 20, 20, 30, 40, ..., 300, then u32::MAX.
        let mut pivots = [u32::MAX; PARTS];
        for (i, p) in pivots[..PARTS - 1].iter_mut().enumerate() {
            *p = 10 * (i as u32 + 1) - if i >= 2 { 10 } else { 0 };
        }
        let of = |v| bucket_of(v, |i| pivots[i]);
        assert_eq!(of(0), 0);
        assert_eq!(of(10), 1);
        assert_eq!(of(15), 2);
        assert_eq!(of(20), 3);
        assert_eq!(of(25), 6);
        assert_eq!(of(290), 2 * 29 + 1);
        assert_eq!(of(291), 2 * 30);
        assert_eq!(of(300), 2 * 30 + 1);
        assert_eq!(of(301), 2 * 31);
        assert_eq!(of(u32::MAX), 2 * 31 + 1);
    }
}
