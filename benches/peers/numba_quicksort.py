"""The quicksort reference program with Numba's `cuda.jit`: the peer of gpu-kernels/src/quicksort.rs
and of the CUDA C++ version in cuda/peers.cu, the same algorithm written the way a Numba user
would (kernels in `cuda.jit`, the host's bookkeeping in `numba.njit`).

Each pass splits every segment longer than SMALL keys at once into up to PARTS parts, as many as
take it to parts of about SMALL / 2 keys in the fewest passes (see parts):
- one block per segment (qs_pivots) sorts a sample of SAMPLES keys spread evenly over it and
  takes up to PARTS - 1 pivots from it at even ranks, the last of its PARTS pivot slots always
  0xFFFFFFFF; it also sets the segment's bucket counts and cursors (two per part, packed from the
  segment's first count) to 0;
- one block per chunk of CHUNK keys (qs_count) counts in shared memory how many of its keys fall
  in each of the segment's BUCKETS buckets, 2i strictly between pivots i - 1 and i, 2i + 1 equal
  to pivot i, and adds the counts to the segment's;
- one block per chunk again (qs_scatter) orders the chunk by bucket in shared memory, claims room
  in each bucket of the segment with one atomic per bucket, and writes each bucket's keys there
  as one contiguous run into the other buffer: passes alternate between the keys and a scratch
  array instead of copying back.

One thread per segment then files its buckets on the device (qs_file): buckets between pivots
longer than SMALL are the next pass's segments, and buckets of keys equal to a pivot are final.
Buckets of at most SMALL keys are gathered with their neighbours into runs of at most SMALL keys
(see gathers), each finished in one block by a bitonic sort in shared memory, two stages of the
network to a pass over it (qs_sort_small), which also brings the run back from the scratch
array; the longer runs of equal keys left there are copied back (qs_copy). Both are launched as
soon as the pass is filed; only the number of each and the next segments come back to the host.
Every pivot is one of the segment's keys, so every bucket between pivots is smaller than its
segment and the sort ends.

    sorter = QuickSort(n)
    passes = sorter.sort(device_keys)   # a uint32 device array of n keys, sorted in place
"""

import numba
import numpy as np
from numba import cuda, int64, uint8, uint32

SMALL = 1024
QS_THREADS = 256
SPLIT_THREADS = 512
KEYS_PER_THREAD = 8
SMALL_PER_THREAD = SMALL // QS_THREADS  # keys each thread of qs_sort_small loads
CHUNK = SPLIT_THREADS * KEYS_PER_THREAD
PARTS = 32
BUCKETS = 2 * PARTS
SAMPLES = 127
PIVOT_THREADS = SAMPLES + 1
GATHERED = 64
FILE_THREADS = 128
# A key's bucket and its rank among the chunk's keys of that bucket, packed in one uint32: the
# rank is under CHUNK, below RANK_BITS bits.
RANK_BITS = 16
RANK_MASK = np.uint32((1 << RANK_BITS) - 1)


def parts_of(length):
    """How many parts a segment of length keys (more than SMALL) is split into, a power of two up
    to PARTS: as few as take it to parts of about SMALL / 2 keys in the fewest passes, the first
    passes taking the extra (2^26 keys: 32, 16, 16, 16 ways)."""
    wanted = (length + SMALL // 2 - 1) // (SMALL // 2)
    bits = 0
    while (1 << bits) < wanted:
        bits += 1
    passes = max((bits + 4) // 5, 1)  # PARTS = 2^5
    return 1 << ((bits + passes - 1) // passes)


parts = cuda.jit(device=True, inline=True)(parts_of)
parts_host = numba.njit(parts_of)


@cuda.jit(device=True, inline=True)
def bucket_of(v, pivot):
    """The bucket of key v among the PARTS sorted pivots, the last of which is 0xFFFFFFFF: 2i
    where i pivots are below v and pivot i is above it, 2i + 1 where pivot i equals it. The
    number of pivots below v by bisection (the last is never below it), in 32 bits."""
    i = uint32(0)
    step = uint32(PARTS // 2)
    while step > 0:
        if pivot[i + step - uint32(1)] < v:
            i = uint32(i + step)
        step = uint32(step >> uint32(1))
    return uint32(uint32(2) * i + uint32(pivot[i] == v))


@cuda.jit(device=True, inline=True)
def load_chunk(src, first, n, t, mine):
    """mine[r] = src[first + t + r SPLIT_THREADS] for each r under KEYS_PER_THREAD (0 past the
    chunk's n keys): all of a thread's loads go out before the first is used."""
    if n == CHUNK:
        for r in range(KEYS_PER_THREAD):
            mine[r] = src[first + t + r * SPLIT_THREADS]
    else:
        for r in range(KEYS_PER_THREAD):
            k = t + r * SPLIT_THREADS
            if k < n:
                mine[r] = src[first + k]
            else:
                mine[r] = 0


@cuda.jit
def qs_pivots(keys, segments, pivots, counts, cursors):
    """Block b, for segment b (start, length, first count o in segments; longer than SMALL):
    pivots[PARTS b:PARTS (b + 1)] = parts(length) - 1 keys at even ranks of a sorted sample of
    SAMPLES keys spread evenly over it (first and last included), then 0xFFFFFFFF; and the
    segment's bucket counts and cursors, counts and cursors[o:o + 2 parts(length)], set to 0.
    PIVOT_THREADS threads a block."""
    sample = cuda.shared.array(SAMPLES, uint32)
    ranked = cuda.shared.array(SAMPLES, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(segments[3 * b])
    length = int64(segments[3 * b + 1])
    base = int64(segments[3 * b + 2])
    p = parts(length)
    if t < SAMPLES:
        sample[t] = keys[start + (length - 1) * t // (SAMPLES - 1)]
    if t < 2 * p:
        counts[base + t] = 0
        cursors[base + t] = 0
    cuda.syncthreads()
    # The sample sorted by rank: the keys below each, ties taken in sample order.
    if t < SAMPLES:
        v = sample[t]
        rank = 0
        for i in range(SAMPLES):
            u = sample[i]
            if u < v or (u == v and i < t):
                rank += 1
        ranked[rank] = v
    cuda.syncthreads()
    if t < PARTS:
        if t + 1 < p:
            pivots[PARTS * b + t] = ranked[(t + 1) * PIVOT_THREADS // p - 1]
        else:
            pivots[PARTS * b + t] = 0xFFFFFFFF


@cuda.jit
def qs_count(src, segments, chunks, pivots, counts):
    """Block b, for chunk b (first key, keys, segment s in chunks) of src: the number of its keys
    in each of the segment's buckets (see bucket_of) added to the segment's counts, from
    counts[segments[3s + 2]] on. SPLIT_THREADS threads a block."""
    pivot = cuda.shared.array(PARTS, uint32)
    tally = cuda.shared.array(BUCKETS, uint32)
    mine = cuda.local.array(KEYS_PER_THREAD, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    first = int64(chunks[3 * b])
    n = int64(chunks[3 * b + 1])
    seg = int64(chunks[3 * b + 2])
    if t < PARTS:
        pivot[t] = pivots[PARTS * seg + t]
    if t < BUCKETS:
        tally[t] = 0
    load_chunk(src, first, n, t, mine)
    cuda.syncthreads()
    for r in range(KEYS_PER_THREAD):
        if t + r * SPLIT_THREADS < n:
            cuda.atomic.add(tally, bucket_of(mine[r], pivot), uint32(1))
    cuda.syncthreads()
    if t < BUCKETS:
        c = tally[t]
        if c > 0:
            cuda.atomic.add(counts, int64(segments[3 * seg + 2]) + t, c)


@cuda.jit
def qs_scatter(src, segments, chunks, pivots, counts, cursors, dst):
    """Block b, for chunk b (first key, keys, segment s in chunks) of src, once qs_count has
    counted all of the segment's chunks: each bucket's keys of the chunk written to dst as one
    contiguous run in that bucket's room in the segment (which starts at segments[3s]), of which
    the bucket's cursor, cursors[segments[3s + 2] + bucket] (from 0), says how much is taken.
    SPLIT_THREADS threads a block."""
    pivot = cuda.shared.array(PARTS, uint32)
    tally = cuda.shared.array(BUCKETS, uint32)
    totals = cuda.shared.array(BUCKETS, uint32)
    first = cuda.shared.array(BUCKETS, uint32)
    offset = cuda.shared.array(BUCKETS, uint32)
    staged = cuda.shared.array(CHUNK, uint32)
    staged_bucket = cuda.shared.array(CHUNK, uint8)
    mine = cuda.local.array(KEYS_PER_THREAD, uint32)
    places = cuda.local.array(KEYS_PER_THREAD, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(chunks[3 * b])
    n = int64(chunks[3 * b + 1])
    seg = int64(chunks[3 * b + 2])
    seg_start = segments[3 * seg]
    base = int64(segments[3 * seg + 2])
    nb = 2 * parts(int64(segments[3 * seg + 1]))
    if t < PARTS:
        pivot[t] = pivots[PARTS * seg + t]
    if t < BUCKETS:
        tally[t] = 0
    if t < nb:
        totals[t] = counts[base + t]
    load_chunk(src, start, n, t, mine)
    cuda.syncthreads()
    # Each key's bucket, and its rank among the chunk's keys of that bucket.
    for r in range(KEYS_PER_THREAD):
        if t + r * SPLIT_THREADS < n:
            bucket = bucket_of(mine[r], pivot)
            rank = cuda.atomic.add(tally, bucket, uint32(1))
            places[r] = uint32((bucket << uint32(RANK_BITS)) | rank)
        else:
            places[r] = 0
    cuda.syncthreads()
    # Where each bucket starts in the chunk and in the segment.
    if t == 0:
        in_chunk = uint32(0)
        in_segment = uint32(seg_start)
        for k in range(nb):
            first[k] = in_chunk
            offset[k] = in_segment
            in_chunk = uint32(in_chunk + tally[k])
            in_segment = uint32(in_segment + totals[k])
    cuda.syncthreads()
    # The chunk's room in each bucket; offset becomes where its key k of the bucket goes, less k
    # (not below 0: the segment's buckets before each hold at least the chunk's keys of them).
    if t < nb:
        c = tally[t]
        if c > 0:
            taken = cuda.atomic.add(cursors, base + t, c)
            offset[t] = uint32(uint32(offset[t] + taken) - first[t])
    # The chunk ordered by bucket in shared memory, with each key's bucket.
    for r in range(KEYS_PER_THREAD):
        if t + r * SPLIT_THREADS < n:
            bucket = places[r] >> uint32(RANK_BITS)
            at = first[bucket] + (places[r] & RANK_MASK)
            staged[at] = mine[r]
            staged_bucket[at] = uint8(bucket)
    cuda.syncthreads()
    for k in range(t, n, SPLIT_THREADS):
        dst[uint32(offset[staged_bucket[k]] + uint32(k))] = staged[k]


@cuda.jit
def qs_copy(keys, scratch, table):
    """Block b: the keys of table row b (first key, keys; at most CHUNK) copied from scratch to
    keys. QS_THREADS threads a block."""
    b = cuda.blockIdx.x
    first = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    for k in range(first + cuda.threadIdx.x, first + n, QS_THREADS):
        keys[k] = scratch[k]


@cuda.jit(device=True, inline=True)
def ordered(x, y, ascending):
    """x and y in order, ascending or descending; both come back, swapped or not."""
    low = x if x < y else y
    high = y if x < y else x
    if ascending:
        return low, high
    return high, low


@cuda.jit
def qs_sort_small(keys, scratch, table):
    """Block b: the segment of table row b (first key, keys, in scratch?; at most SMALL keys)
    sorted into keys by a bitonic sort in shared memory, over its length rounded up to a power
    of two (at least 4), two stages of the network to a pass over shared memory. QS_THREADS
    threads a block."""
    s = cuda.shared.array(SMALL, uint32)
    mine = cuda.local.array(SMALL_PER_THREAD, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(table[3 * b])
    length = int64(table[3 * b + 1])
    from_scratch = table[3 * b + 2] != 0
    n = 4
    while n < length:
        n *= 2
    # Each thread's keys, padded with the largest key: all its loads go out before the first is
    # used.
    for r in range(SMALL_PER_THREAD):
        k = t + r * QS_THREADS
        mine[r] = 0xFFFFFFFF
        if k < length:
            if from_scratch:
                mine[r] = scratch[start + k]
            else:
                mine[r] = keys[start + k]
    for r in range(SMALL_PER_THREAD):
        k = t + r * QS_THREADS
        if k < n:
            s[k] = mine[r]
    cuda.syncthreads()
    # The network's positions in 32 bits.
    t32 = uint32(t)
    quarter = uint32(n // 4)
    size = uint32(2)
    while size <= n:
        # The phase's strides, size / 2 down to 1, two to a pass over shared memory: each thread
        # reads four keys closed under both, and writes them back after both stages. Where the
        # strides left are odd in number (stride an even power of two), the first goes alone,
        # two pairs a thread.
        stride = uint32(size >> uint32(1))
        while stride > 0:
            two = (stride & uint32(0xAAAAAAAA)) != 0
            group = t32
            while group < quarter:
                if two:
                    # Four keys half apart in pairs stride apart: group with two zero bits put
                    # in at half and stride.
                    half = uint32(stride >> uint32(1))
                    a = uint32(((group & ~uint32(half - uint32(1))) << uint32(2))
                               | (group & uint32(half - uint32(1))))
                    ascending = (a & size) == 0
                    c = uint32(a + stride)
                    w, y = ordered(s[a], s[c], ascending)
                    x, z = ordered(s[a + half], s[c + half], ascending)
                    s[a], s[a + half] = ordered(w, x, ascending)
                    s[c], s[c + half] = ordered(y, z, ascending)
                else:
                    # The pairs group and group + n / 4 of the stage: blocks of stride pairs,
                    # each 2 stride keys apart.
                    for pair in (group, uint32(group + quarter)):
                        a = uint32(((pair & ~uint32(stride - uint32(1))) << uint32(1))
                                   | (pair & uint32(stride - uint32(1))))
                        s[a], s[a + stride] = ordered(s[a], s[a + stride], (a & size) == 0)
                group = uint32(group + uint32(QS_THREADS))
            cuda.syncthreads()
            if two:
                stride = uint32(stride >> uint32(2))
            else:
                stride = uint32(stride >> uint32(1))
        size = uint32(size << uint32(1))
    for k in range(t, length, QS_THREADS):
        keys[start + k] = s[k]


@cuda.jit(device=True, inline=True)
def pow2_at_least(x):
    p = 1
    while p < x:
        p *= 2
    return p


@cuda.jit(device=True, inline=True)
def gathers(run, length):
    """Whether a run of run keys to sort in one block takes in the next bucket, of length keys:
    where the two together are at most SMALL keys and their bitonic network is no longer than
    the longer one's alone (or than that of GATHERED keys): a longer network costs more than the
    block it saves."""
    both = run + length
    return both <= SMALL and pow2_at_least(both) <= pow2_at_least(max(run, length, GATHERED))


@cuda.jit(device=True, inline=True)
def file_run(write, runs, r, start, length, in_scratch):
    """Files the run start, length (at most SMALL keys) to sort, where it needs sorting or
    bringing back from the scratch array: as row r of runs where write; returns the rows
    taken then."""
    if length > 1 or (length == 1 and in_scratch):
        if write:
            runs[3 * r] = start
            runs[3 * r + 1] = length
            runs[3 * r + 2] = 1 if in_scratch else 0
        r += 1
    return r


@cuda.jit(device=True, inline=True)
def file(write, start, counts, base, nb, in_scratch, runs, r, large, g, copies, c):
    """Files the nb buckets counts[base:base + nb] of the segment at start, split into the
    scratch array or not, in order: those longer than SMALL and between pivots as the next
    pass's segments (large, from row g), the rest gathered into runs to sort in one block (runs,
    from row r; a run of neighbouring buckets sorted is sorted; see gathers), and the equal keys
    of longer buckets as final, their chunks copied back where they lie in the scratch array
    (copies, from row c). Writes the rows only where write; returns the rows taken then."""
    run = start
    run_len = int64(0)
    nxt = start
    for bucket in range(nb):
        length = int64(counts[base + bucket])
        if not gathers(run_len, length):
            r = file_run(write, runs, r, run, run_len, in_scratch)
            run = nxt
            run_len = 0
        if length <= SMALL:
            run_len += length
        else:
            if bucket % 2 == 0:
                if write:
                    large[2 * g] = nxt
                    large[2 * g + 1] = length
                g += 1
            elif in_scratch:
                first = nxt
                while first < nxt + length:
                    if write:
                        copies[3 * c] = first
                        copies[3 * c + 1] = min(CHUNK, nxt + length - first)
                        copies[3 * c + 2] = 0
                    c += 1
                    first += CHUNK
            run = nxt + length
        nxt += length
    r = file_run(write, runs, r, run, run_len, in_scratch)
    return r, g, c


@cuda.jit
def qs_file(segments, counts, in_scratch, filed, runs, large, copies):
    """Thread s, for segment s (as in qs_pivots), once qs_scatter has split it into the scratch
    array or not: files its buckets (see file), taking rows of runs, large and copies counted
    by filed[0], filed[1], filed[2] (from 0). filed[3] becomes s + 1 where the counts do not
    add up to the segment or leave no key equal to a pivot (nothing is filed then), and filed[4]
    counts the segments seen. FILE_THREADS threads a block."""
    s = cuda.grid(1)
    if s >= segments.size // 3:
        return
    start = int64(segments[3 * s])
    length = int64(segments[3 * s + 1])
    base = int64(segments[3 * s + 2])
    nb = 2 * parts(length)
    cuda.atomic.add(filed, 4, uint32(1))
    total = int64(0)
    shrinks = True
    for k in range(nb):
        total += int64(counts[base + k])
        if k % 2 == 0 and int64(counts[base + k]) >= length:
            shrinks = False
    if total != length or not shrinks:
        cuda.atomic.max(filed, 3, uint32(s + 1))
        return
    scratch = in_scratch != 0
    r, g, c = file(False, start, counts, base, nb, scratch, runs, 0, large, 0, copies, 0)
    if r > 0:
        r = cuda.atomic.add(filed, 0, uint32(r))
    if g > 0:
        g = cuda.atomic.add(filed, 1, uint32(g))
    if c > 0:
        c = cuda.atomic.add(filed, 2, uint32(c))
    file(True, start, counts, base, nb, scratch, runs, int64(r), large, int64(g), copies, int64(c))


@numba.njit
def pass_tables(large):
    """For the segments (start, length) of a pass: the segment table (start, length, first
    count; the counts packed, two per part), qs_count's and qs_scatter's chunk table (first key,
    keys, segment; one row per CHUNK keys), the number of counts, and the most rows the filing
    can take in its runs, segments and copies tables."""
    nsegs = large.size // 2
    segments = np.empty(3 * nsegs, np.uint32)
    rows = 0
    for i in range(nsegs):
        rows += (int64(large[2 * i + 1]) + CHUNK - 1) // CHUNK
    chunks = np.empty(3 * rows, np.uint32)
    nb = most_runs = most_segs = most_copies = 0
    filled = 0
    for i in range(nsegs):
        start = int64(large[2 * i])
        length = int64(large[2 * i + 1])
        p = parts_host(length)
        segments[3 * i] = start
        segments[3 * i + 1] = length
        segments[3 * i + 2] = nb
        nb += 2 * p
        first = start
        while first < start + length:
            chunks[filled] = first
            chunks[filled + 1] = min(CHUNK, start + length - first)
            chunks[filled + 2] = i
            filled += 3
            first += CHUNK
        # A run ends at each bucket, or at the end; every other bucket may be a segment; the
        # chunks of equal keys are fewer than the segment's, one more per bucket.
        most_runs += 2 * p + 1
        most_segs += p
        most_copies += (length + CHUNK - 1) // CHUNK + p
    return segments, chunks, nb, most_runs, most_segs, most_copies


class QuickSort:
    """Sorts uint32 device arrays of n keys in place, keeping its device buffers from sort to
    sort (as the CUDA C++ peer does)."""

    def __init__(self, n):
        if n > 0xFFFFFFFF:
            raise ValueError(f"QuickSort({n}): at most 2^32 - 1 keys")
        self.n = n
        self.scratch = cuda.device_array(n if n > SMALL else 1, np.uint32)
        self.buffers = {}

    def buffer(self, name, size):
        d = self.buffers.get(name)
        if d is None or d.size < size:
            d = cuda.device_array(max(size, 1), np.uint32)
            self.buffers[name] = d
        return d[:size]

    def upload(self, name, host):
        d = self.buffer(name, host.size)
        d.copy_to_device(host)
        return d

    def sort(self, keys):
        """Sorts keys in place; returns the number of splitting passes."""
        if keys.size != self.n:
            raise ValueError(f"QuickSort({self.n}) cannot sort {keys.size} keys")
        if self.n <= SMALL:
            if self.n > 1:
                table = self.upload("one", np.array([0, self.n, 0], np.uint32))
                qs_sort_small[1, QS_THREADS](keys, self.scratch, table)
            return 0
        large = np.array([0, self.n], np.uint32)
        in_scratch = False  # where the segments still to split lie
        passes = 0
        while large.size:
            passes += 1
            nsegs = large.size // 2
            segments, chunks, nb, most_runs, most_segs, most_copies = pass_tables(large)
            blocks = chunks.size // 3
            src, dst = (self.scratch, keys) if in_scratch else (keys, self.scratch)
            segments_d = self.upload("segments", segments)
            chunks_d = self.upload("chunks", chunks)
            pivots_d = self.buffer("pivots", PARTS * nsegs)
            counts_d = self.buffer("counts", nb)
            cursors_d = self.buffer("cursors", nb)
            qs_pivots[nsegs, PIVOT_THREADS](src, segments_d, pivots_d, counts_d, cursors_d)
            qs_count[blocks, SPLIT_THREADS](src, segments_d, chunks_d, pivots_d, counts_d)
            qs_scatter[blocks, SPLIT_THREADS](src, segments_d, chunks_d, pivots_d, counts_d,
                                              cursors_d, dst)
            # Each segment is now, in the other buffer, its buckets in order: filed on the device.
            in_scratch = not in_scratch
            filed_d = self.upload("filed", np.zeros(5, np.uint32))
            runs_d = self.buffer("runs", 3 * most_runs)
            large_d = self.buffer("large", 2 * most_segs)
            copies_d = self.buffer("copies", 3 * most_copies)
            qs_file[(nsegs + FILE_THREADS - 1) // FILE_THREADS, FILE_THREADS](
                segments_d, counts_d, np.uint32(in_scratch), filed_d, runs_d, large_d, copies_d)
            filed = filed_d.copy_to_host()
            if filed[3] != 0:
                bad = int(filed[3]) - 1
                start = int(segments[3 * bad])
                end = start + int(segments[3 * bad + 1])
                base = int(segments[3 * bad + 2])
                lens = counts_d.copy_to_host()[base:base + 2 * parts_host(end - start)].tolist()
                raise RuntimeError(
                    f"qs_count: the segment {start}..{end} came back split into buckets of "
                    f"{lens} keys, which do not add up to it, or leave no key equal to a pivot")
            if filed[4] != nsegs:
                raise RuntimeError(f"qs_file: {filed[4]} of the {nsegs} segments were filed")
            runs, segs, copies = (int(k) for k in filed[:3])
            large = large_d[:2 * segs].copy_to_host() if segs else np.empty(0, np.uint32)
            if copies:
                qs_copy[copies, QS_THREADS](keys, self.scratch, copies_d)
            if runs:
                qs_sort_small[runs, QS_THREADS](keys, self.scratch, runs_d)
        return passes
