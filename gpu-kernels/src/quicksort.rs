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
//! One thread per segment then files its buckets on the device ([`qs_file`]): the buckets
//! between pivots longer than [`SMALL`] become the next pass's segments, and those of keys equal
//! to a pivot are final. Every pivot is one of the segment's keys, so every bucket between
//! pivots is smaller than its segment and the sort ends. Runs of at most [`SMALL`] keys
//! (neighbouring buckets gathered) are finished in one block by a bitonic sort in shared memory
//! ([`qs_sort_small`]), which also brings them back from the scratch array; longer runs of equal
//! keys left there are copied back by [`qs_copy`]. Only the number of each and the next pass's
//! segments come back to the host, which makes the tables of the next pass's kernels: a few
//! `u32`s per block.

use kernel_runtime::prelude::*;

/// Segments of at most this many keys are sorted in one block, in shared memory.
pub const SMALL: usize = 1024;
/// Threads per block of the copying and small-sort kernels: a quarter of [`SMALL`], so that
/// each thread of a small sort's network has four keys, one group of a pass, at most.
pub const QS_THREADS: usize = 256;
const _: () = assert!(SMALL == 4 * QS_THREADS);
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
    // arithmetic against `usize`'s 64. The padded length has a binding of its own, apart from
    // the thread's index: every thread of the block holds the same, which the CPU backend then
    // keeps once per block.
    let t = t as u32;
    let padded = n as u32;
    let mut size = 2;
    while size <= padded {
        // The phase's strides, `size / 2` down to 1, two to a pass over shared memory: each
        // thread reads four keys closed under both, and writes them back after both stages.
        // Where the strides left are odd in number, the first goes alone, two pairs a thread.
        let mut stride = size / 2;
        while stride > 0 {
            let two = stride.trailing_zeros() % 2 == 1;
            // Each thread has one group at most (`padded / 4 <= SMALL / 4 = QS_THREADS`): an
            // `if`, not a loop, which leaves the CPU backend's thread loop the innermost.
            let group = t;
            if group < padded / 4 {
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
                    // The pairs `group` and `group + padded / 4` of the stage: blocks of `stride`
                    // pairs, each `2 * stride` keys apart.
                    for pair in [group, group + padded / 4] {
                        let a = ((pair & !(stride - 1)) << 1) | (pair & (stride - 1));
                        let (a, b) = (a as usize, (a + stride) as usize);
                        (s[a], s[b]) = ordered(s[a], s[b], a as u32 & size == 0);
                    }
                }
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

/// Calls `f(first key, keys)` for each chunk of [`CHUNK`] keys (the last maybe fewer) of the
/// keys `start..start + len`: the rows of [`qs_count`]'s and [`qs_scatter`]'s table, and of
/// [`qs_copy`]'s.
#[device]
fn chunks_of(start: u32, len: u32, mut f: impl FnMut(u32, u32)) {
    let mut from = start;
    while from < start + len {
        f(from, (CHUNK as u32).min(start + len - from));
        from += CHUNK as u32;
    }
}

/// Threads per block of [`qs_file`], one per segment.
pub const FILE_THREADS: usize = 128;

/// What the filing of a segment's buckets makes of them: `(first key, keys)` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Filed {
    /// A run of neighbouring buckets, at most [`SMALL`] keys, to sort in one block.
    Run(u32, u32),
    /// A bucket between pivots of more than [`SMALL`] keys: a segment of the next pass.
    Segment(u32, u32),
    /// A bucket of more than [`SMALL`] keys equal to a pivot, final but in the scratch array.
    Copy(u32, u32),
}

/// Whether a run of `run` keys to sort in one block takes in the next bucket, of `len` keys:
/// where the two together are at most [`SMALL`] keys and their bitonic network is no longer than
/// the longer one's alone (or than that of [`GATHERED`] keys): a longer network costs more than
/// the block it saves.
#[device]
fn gathers(run: u32, len: u32) -> bool {
    let both = run + len;
    both as usize <= SMALL
        && both.next_power_of_two() <= run.max(len).max(GATHERED as u32).next_power_of_two()
}

/// Runs up to this many keys take in any bucket that fits (see [`gathers`]).
const GATHERED: usize = 64;

/// Files the `buckets` buckets `lens(0..buckets)` of the segment that starts at `start`, just
/// split into the scratch array where `scratch`, in order, through `emit`: those between pivots
/// longer than [`SMALL`] as segments; the rest gathered into runs to sort in one block (a run of
/// neighbouring buckets sorted is sorted; see [`gathers`]); the equal keys of longer buckets as
/// final, to copy back where they lie in the scratch array.
#[device]
fn file(
    start: u32,
    lens: impl Fn(usize) -> u32,
    buckets: usize,
    scratch: bool,
    mut emit: impl FnMut(Filed),
) {
    let (mut run, mut run_len, mut next) = (start, 0, start);
    for bucket in 0..buckets {
        let len = lens(bucket);
        if !gathers(run_len, len) {
            file_run(run, run_len, scratch, &mut emit);
            (run, run_len) = (next, 0);
        }
        if len as usize <= SMALL {
            run_len += len;
        } else {
            if bucket % 2 == 0 {
                emit(Filed::Segment(next, len));
            } else if scratch {
                emit(Filed::Copy(next, len));
            }
            run = next + len;
        }
        next += len;
    }
    file_run(run, run_len, scratch, &mut emit);
}

/// Files the run `start`, `len` (at most [`SMALL`] keys) to sort, unless it is sorted where it
/// must end up: no key, or one key outside the scratch array.
#[device]
fn file_run(start: u32, len: u32, scratch: bool, emit: &mut impl FnMut(Filed)) {
    if len > 1 || (len == 1 && scratch) {
        emit(Filed::Run(start, len));
    }
}

/// Whether the counts `lens(0..buckets)` split a segment of `len` keys into buckets that add
/// up to it, each between pivots smaller than it: counts that say otherwise come from kernels
/// that went wrong, and would make the sort loop forever.
#[device]
fn splits(len: usize, lens: impl Fn(usize) -> u32, buckets: usize) -> bool {
    let (mut total, mut shrinks) = (0, true);
    for k in 0..buckets {
        total += lens(k) as usize;
        shrinks &= k % 2 == 1 || (lens(k) as usize) < len;
    }
    total == len && shrinks
}

/// Per thread `s` (one per row of `segments`, as in [`qs_pivots`]), once [`qs_scatter`] has
/// split the segment into the scratch array (`scratch` not 0) or the keys: files its buckets
/// (see [`qs_count`] for their counts): runs to sort in one block as rows `(start, length,
/// scratch)` of `runs`, for [`qs_sort_small`]; segments of the next pass as pairs `(start,
/// length)` of `large`; chunks of equal keys to copy back as rows `(first key, keys, 0)` of
/// `copies`, for [`qs_copy`]. `filed[0..3]` (from 0) count the rows of each table taken;
/// `filed[3]` becomes `s + 1` for a segment whose counts do not add up to it or leave no key
/// equal to a pivot, which files nothing; `filed[4]` counts the segments looked at. Launch
/// [`FILE_THREADS`] threads per block.
#[kernel]
pub fn qs_file(
    segments: &[u32],
    counts: &[u32],
    scratch: u32,
    filed: &mut [u32],
    runs: &mut [u32],
    large: &mut [u32],
    copies: &mut [u32],
) {
    let s = grid(1);
    if s >= segments.len() / 3 {
        return;
    }
    let (start, len, base) = table_row(|i| segments[3 * s + i]);
    let buckets = 2 * parts(len);
    let lens = |k: usize| counts[base + k];
    atomic_add(&filed, 4, 1);
    if !splits(len, lens, buckets) {
        atomic_max(&filed, 3, s as u32 + 1);
        return;
    }
    // The rows this segment takes in each table, then room for them.
    let (start, at_scratch) = (start as u32, scratch != 0);
    let (mut run, mut segment, mut copy) = (0, 0, 0);
    file(start, lens, buckets, at_scratch, |filed| match filed {
        Filed::Run(..) => run += 1,
        Filed::Segment(..) => segment += 1,
        Filed::Copy(_, len) => copy += len.div_ceil(CHUNK as u32),
    });
    let mut run = if run > 0 {
        atomic_add(&filed, 0, run) as usize
    } else {
        0
    };
    let mut segment = if segment > 0 {
        atomic_add(&filed, 1, segment) as usize
    } else {
        0
    };
    let mut copy = if copy > 0 {
        atomic_add(&filed, 2, copy) as usize
    } else {
        0
    };
    file(start, lens, buckets, at_scratch, |filed| match filed {
        Filed::Run(first, len) => {
            runs[3 * run] = first;
            runs[3 * run + 1] = len;
            runs[3 * run + 2] = scratch;
            run += 1;
        }
        Filed::Segment(first, len) => {
            large[2 * segment] = first;
            large[2 * segment + 1] = len;
            segment += 1;
        }
        Filed::Copy(first, len) => chunks_of(first, len, |from, n| {
            copies[3 * copy] = from;
            copies[3 * copy + 1] = n;
            copies[3 * copy + 2] = 0;
            copy += 1;
        }),
    });
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

/// One splitting pass over a list of segments: its tables and counters on the device, and its
/// three kernels ([`qs_pivots`], [`qs_count`], [`qs_scatter`]).
#[cfg(not(target_arch = "nvptx64"))]
pub struct SplitPass {
    /// The segments' table, as on the device: (start, length, first count) triples.
    table: Vec<u32>,
    segments: kernel_runtime::DeviceArray1<u32>,
    chunks: kernel_runtime::DeviceArray1<u32>,
    pivots: kernel_runtime::DeviceArray1<u32>,
    counts: kernel_runtime::DeviceArray1<u32>,
    cursors: kernel_runtime::DeviceArray1<u32>,
    /// The most rows the filing of the pass's buckets can take in each of its tables: runs,
    /// segments, chunks to copy.
    most: [usize; 3],
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
        let (mut buckets, mut most) = (0, [0; 3]);
        for (i, seg) in large.chunks_exact(2).enumerate() {
            let parts = parts(seg[1] as usize);
            table.extend([seg[0], seg[1], buckets as u32]);
            buckets += 2 * parts;
            chunks_of(seg[0], seg[1], |from, n| chunks.extend([from, n, i as u32]));
            // A run ends at each bucket, or at the end; every other bucket may be a segment;
            // the chunks of equal keys are fewer than the segment's, one more per bucket.
            most[0] += 2 * parts + 1;
            most[1] += parts;
            most[2] += (seg[1] as usize).div_ceil(CHUNK) + parts;
        }
        // The counters are cleared by the pivot kernel, on every launch.
        Ok(SplitPass {
            segments: dev.to_device(&table)?,
            table,
            chunks: dev.to_device(&chunks)?,
            pivots: dev.empty::<u32, _>(PARTS * segments)?,
            counts: dev.empty::<u32, _>(buckets)?,
            cursors: dev.empty::<u32, _>(buckets)?,
            most,
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

    /// Files the buckets of the pass just launched, split into the scratch array where
    /// `scratch`, with [`qs_file`] on the device: only the number of rows of each table, and
    /// the next pass's segments, come back to the host.
    fn file(&self, scratch: bool) -> Result<Filing, kernel_runtime::Error> {
        let dev = self.segments.device();
        let segments = self.table.len() / 3;
        let mut filing = Filing {
            runs: dev.empty::<u32, _>(3 * self.most[0])?,
            large: dev.empty::<u32, _>(2 * self.most[1])?,
            copies: dev.empty::<u32, _>(3 * self.most[2])?,
            taken: [0; 3],
        };
        let mut filed = dev.zeros::<u32, _>(5)?;
        let args = (
            &self.segments,
            &self.counts,
            u32::from(scratch),
            &mut filed,
            &mut filing.runs,
            &mut filing.large,
            &mut filing.copies,
        );
        qs_file.launch(segments.div_ceil(FILE_THREADS), FILE_THREADS, args)?;
        let filed = filed.to_vec()?;
        if filed[3] != 0 {
            return Err(self.bad_split(filed[3] as usize - 1));
        }
        if filed[4] as usize != segments {
            return Err(kernel_runtime::Error::KernelFault {
                kernel: "qs_file",
                message: format!(
                    "{} of the {segments} segments of the pass were filed",
                    filed[4]
                ),
            });
        }
        filing.taken = [filed[0], filed[1], filed[2]].map(|k| k as usize);
        Ok(filing)
    }

    /// The fault of a segment whose counts do not split it (see [`qs_file`]).
    fn bad_split(&self, segment: usize) -> kernel_runtime::Error {
        let [start, len, base] = [0, 1, 2].map(|i| self.table[3 * segment + i]);
        let base = base as usize;
        let counts = self
            .counts
            .to_vec_range(base..base + 2 * parts(len as usize))
            .map_or_else(|e| format!("unreadable ({e})"), |c| format!("{c:?}"));
        let end = u64::from(start) + u64::from(len);
        kernel_runtime::Error::KernelFault {
            kernel: "qs_count",
            message: format!(
                "the segment {start}..{end} came back split into buckets of {counts} keys, \
                 which do not add up to it, or leave no key equal to a pivot"
            ),
        }
    }
}

/// What [`qs_file`] filed from one pass: its tables on the device, and the rows taken in each.
#[cfg(not(target_arch = "nvptx64"))]
struct Filing {
    runs: kernel_runtime::DeviceArray1<u32>,
    large: kernel_runtime::DeviceArray1<u32>,
    copies: kernel_runtime::DeviceArray1<u32>,
    taken: [usize; 3],
}

/// Sorts `keys` in place on its device with the kernels above; returns the number of
/// splitting passes. Each pass's runs are sorted, and its equal keys copied back, as soon as it
/// is filed; only the next pass's segments come back to the host. A pass whose counts do not
/// split each segment into smaller parts is an [`Error::KernelFault`] of `qs_count`, not an
/// endless sort.
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
    if n <= SMALL {
        if n > 1 {
            // One run, in the keys: the scratch array is not read.
            let (table, unread) = (dev.to_device(&[0, n as u32, 0])?, dev.empty::<u32, _>(1)?);
            qs_sort_small.launch(1, QS_THREADS, (&mut *keys, &unread, &table))?;
        }
        return Ok(0);
    }
    // Every buffer below is written before it is read: none is cleared.
    let mut scratch = dev.empty::<u32, _>(n)?;
    let mut large = vec![0, n as u32];
    let mut at = Buffer::Keys;
    let mut passes = 0;
    while !large.is_empty() {
        passes += 1;
        let mut pass = SplitPass::new(&dev, &large)?;
        match at {
            Buffer::Keys => pass.launch(keys, &mut scratch)?,
            Buffer::Scratch => pass.launch(&scratch, keys)?,
        }
        // Each segment is now, in the other buffer, its buckets in order.
        at = at.other();
        let filing = pass.file(at == Buffer::Scratch)?;
        let [runs, segments, copies] = filing.taken;
        large = filing.large.to_vec_range(0..2 * segments)?;
        // Queued behind the pass, while the host makes the next one ready.
        if copies > 0 {
            let args = (&mut *keys, &scratch, &filing.copies);
            qs_copy.launch(copies, QS_THREADS, args)?;
        }
        if runs > 0 {
            let args = (&mut *keys, &scratch, &filing.runs);
            qs_sort_small.launch(runs, QS_THREADS, args)?;
        }
    }
    Ok(passes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the buckets `lens` of a segment at `start` are filed as.
    fn filed(start: u32, lens: &[u32], scratch: bool) -> Vec<Filed> {
        let mut all = Vec::new();
        file(start, |k| lens[k], lens.len(), scratch, |f| all.push(f));
        all
    }

    #[test]
    fn small_buckets_are_gathered_where_their_sort_grows_no_longer() {
        use Filed::Run;
        let runs = filed(100, &[300, 1, 300, 1, 500, 0], true);
        assert_eq!(runs, [Run(100, 301), Run(401, 301), Run(702, 500)]);
        // Tiny buckets gather up to a network of GATHERED keys, and runs to SMALL at most.
        let runs = filed(0, &[3, 1, 3, 1, 50, 1, 1000, 23, 2, 0], true);
        assert_eq!(runs, [Run(0, 59), Run(59, 1023), Run(1082, 2)]);
        assert!(gathers(0, SMALL as u32) && !gathers(1, SMALL as u32));
        assert!(gathers(GATHERED as u32 / 2, GATHERED as u32 / 2));
    }

    #[test]
    fn long_buckets_between_pivots_are_segments_and_split_the_runs() {
        use Filed::{Run, Segment};
        let all = filed(0, &[10, 1, 5000, 1, 0, 1, 9, 0], false);
        assert_eq!(all, [Run(0, 11), Segment(11, 5000), Run(5011, 11)]);
    }

    #[test]
    fn long_runs_of_equal_keys_are_final_and_copied_back_from_scratch() {
        use Filed::{Copy, Run};
        let long = (CHUNK + 5) as u32;
        let lens = [3, long, 2, 0];
        assert_eq!(filed(7, &lens, false), [Run(7, 3), Run(10 + long, 2)]);
        let all = filed(7, &lens, true);
        assert_eq!(all, [Run(7, 3), Copy(10, long), Run(10 + long, 2)]);
    }

    #[test]
    fn single_keys_are_filed_only_where_they_must_move() {
        assert!(filed(0, &[0, 1], false).is_empty());
        assert_eq!(filed(0, &[0, 1], true), [Filed::Run(0, 1)]);
    }

    #[test]
    fn a_split_must_add_up_and_shrink_every_part() {
        let splits = |lens: &[u32]| splits(10, |k| lens[k], lens.len());
        assert!(splits(&[4, 1, 5, 0]));
        // Short of the segment, or all of it in one bucket between pivots.
        assert!(!splits(&[4, 1, 4, 0]) && !splits(&[10, 0]));
        // All of it equal to a pivot is a split: those keys are final.
        assert!(splits(&[0, 10]));
    }

    #[test]
    fn the_tables_have_room_for_all_a_pass_files() {
        // The most rows a segment's filing takes, against SplitPass::new's bounds: every bucket
        // a run and every other one a segment, or every equal bucket long.
        let len = 40 * CHUNK as u32;
        let p = parts(len as usize);
        let mut lens = vec![0; 2 * p];
        lens[1] = len;
        let copies: u32 = filed(0, &lens, true)
            .iter()
            .map(|f| match f {
                Filed::Copy(_, len) => len.div_ceil(CHUNK as u32),
                _ => 0,
            })
            .sum();
        assert!(copies as usize <= (len as usize).div_ceil(CHUNK) + p);
        let lens: Vec<u32> = (0..2 * p).map(|k| [2, 1300][k % 2]).collect();
        assert!(filed(0, &lens, true).len() <= 2 * p + 1);
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
