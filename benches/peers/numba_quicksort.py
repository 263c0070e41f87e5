"""The quicksort reference program with Numba's `cuda.jit`: the peer of gpu-kernels/src/quicksort.rs
and of the CUDA C++ version in cuda/peers.cu, the same algorithm written the way a Numba user
would (kernels in `cuda.jit`, the host's bookkeeping in `numba.njit`).

Each pass splits every segment longer than SMALL keys at once into up to PARTS parts:
- one block per segment (qs_pivots) sorts a sample of SAMPLES keys spread evenly over it and
  takes up to PARTS - 1 pivots from it at even ranks, the last of its PARTS pivot slots always
  0xFFFFFFFF; it also sets the segment's bucket counts and cursors to 0;
- one block per chunk of CHUNK keys (qs_count) counts in shared memory how many of its keys fall
  in each of the segment's BUCKETS buckets, 2i strictly between pivots i - 1 and i, 2i + 1 equal
  to pivot i, and adds the counts to the segment's;
- one block per chunk again (qs_scatter) orders the chunk by bucket in shared memory, claims room
  in each bucket of the segment with one atomic per bucket, and writes each bucket's keys there
  as one contiguous run into the other buffer: passes alternate between the keys and a scratch
  array instead of copying back.

The host reads the counts back: buckets between pivots longer than SMALL are the next pass's
segments, and buckets of keys equal to a pivot are final. Buckets of at most SMALL keys are
gathered with their neighbours into runs of at most SMALL keys (see gathers), each finished in
one block by a bitonic sort in shared memory, two stages of the network to a pass over it
(qs_sort_small), which also brings the run back from the scratch array; the longer runs of equal
keys left there are copied back (qs_copy). Every pivot is one of the segment's keys, so every
bucket between pivots is smaller than its segment and the sort ends.

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
PARTS = 16
BUCKETS = 2 * PARTS
SAMPLES = 127
PIVOT_THREADS = SAMPLES + 1
GATHERED = 64
# A key's bucket and its rank among the chunk's keys of that bucket, packed in one uint32: the
# rank is under CHUNK, below RANK_BITS bits.
RANK_BITS = 16
RANK_MASK = np.uint32((1 << RANK_BITS) - 1)


@cuda.jit(device=True, inline=True)
def parts(length):
    """How many parts a segment of length keys is split into: about SMALL / 2 keys each, at most
    PARTS; a power of two."""
    wanted = (length + SMALL // 2 - 1) // (SMALL // 2)
    p = 1
    while p < wanted and p < PARTS:
        p *= 2
    return p


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
    """Block b, for segment b (start, length in segments; longer than SMALL): pivots[PARTS b:
    PARTS (b + 1)] = parts(length) - 1 keys at even ranks of a sorted sample of SAMPLES keys
    spread evenly over it (first and last included), then 0xFFFFFFFF; and the segment's bucket
    counts and cursors, counts and cursors[BUCKETS b:BUCKETS (b + 1)], set to 0. PIVOT_THREADS
    threads a block."""
    sample = cuda.shared.array(SAMPLES, uint32)
    ranked = cuda.shared.array(SAMPLES, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(segments[2 * b])
    length = int64(segments[2 * b + 1])
    if t < SAMPLES:
        sample[t] = keys[start + (length - 1) * t // (SAMPLES - 1)]
    if t < BUCKETS:
        counts[BUCKETS * b + t] = 0
        cursors[BUCKETS * b + t] = 0
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
        p = parts(length)
        if t + 1 < p:
            pivots[PARTS * b + t] = ranked[(t + 1) * PIVOT_THREADS // p - 1]
        else:
            pivots[PARTS * b + t] = 0xFFFFFFFF


@cuda.jit
def qs_count(src, chunks, pivots, counts):
    """Block b, for chunk b (first key, keys, segment s in chunks) of src: the number of its keys
    in each of the segment's buckets (see bucket_of) added to counts[BUCKETS s:BUCKETS (s + 1)].
    SPLIT_THREADS threads a block."""
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
            cuda.atomic.add(counts, BUCKETS * seg + t, c)


@cuda.jit
def qs_scatter(src, segments, chunks, pivots, counts, cursors, dst):
    """Block b, for chunk b (first key, keys, segment s in chunks) of src, once qs_count has
    counted all of the segment's chunks: each bucket's keys of the chunk written to dst as one
    contiguous run in that bucket's room in the segment (which starts at segments[2s]), of which
    the bucket's cursor, cursors[BUCKETS s + bucket] (from 0), says how much is taken.
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
    if t < PARTS:
        pivot[t] = pivots[PARTS * seg + t]
    if t < BUCKETS:
        tally[t] = 0
        totals[t] = counts[BUCKETS * seg + t]
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
        in_segment = uint32(segments[2 * seg])
        for k in range(BUCKETS):
            first[k] = in_chunk
            offset[k] = in_segment
            in_chunk = uint32(in_chunk + tally[k])
            in_segment = uint32(in_segment + totals[k])
    cuda.syncthreads()
    # The chunk's room in each bucket; offset becomes where its key k of the bucket goes, less k
    # (not below 0: the segment's buckets before each hold at least the chunk's keys of them).
    if t < BUCKETS:
        c = tally[t]
        if c > 0:
            taken = cuda.atomic.add(cursors, BUCKETS * seg + t, c)
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


# The host's plan is three uint32 tables, each filled up to a count of its entries: the segments
# longer than SMALL (start, length: qs_pivots' table), the runs of at most SMALL keys to sort or
# bring back from the scratch array (start, length, in scratch?: qs_sort_small's) and the chunks
# of the longer runs of equal keys left in the scratch array (first key, keys, 0: qs_copy's).


@numba.njit
def pow2_at_least(x):
    p = 1
    while p < x:
        p *= 2
    return p


@numba.njit
def gathers(run, length):
    """Whether a run of run keys to sort in one block takes in the next bucket, of length keys:
    where the two together are at most SMALL keys and their bitonic network is no longer than
    the longer one's alone (or than that of GATHERED keys): a longer network costs more than the
    block it saves."""
    both = run + length
    return both <= SMALL and pow2_at_least(both) <= pow2_at_least(max(run, length, GATHERED))


@numba.njit
def push_chunks(table, filled, start, length, tag):
    """Writes one row (first key, keys, tag) per CHUNK of the run start, length into table from
    entry filled on; returns the entries filled then. The rows of qs_count's and qs_scatter's
    table (the tag is the run's segment) and of qs_copy's (the tag is not read)."""
    first = start
    end = start + length
    while first < end:
        table[filled] = first
        table[filled + 1] = min(CHUNK, end - first)
        table[filled + 2] = tag
        filled += 3
        first += CHUNK
    return filled


@numba.njit
def small_run(small, ns, start, length, in_scratch):
    """Files the run start, length (at most SMALL keys) that lies in the scratch array or not,
    to be sorted, where it needs sorting or bringing back; returns small's entries filled."""
    if length > 1 or (length == 1 and in_scratch):
        small[ns] = start
        small[ns + 1] = length
        small[ns + 2] = 1 if in_scratch else 0
        ns += 3
    return ns


@numba.njit
def segment(large, nl, small, ns, start, length, in_scratch):
    """Files the segment start, length, still to sort; returns large's and small's entries
    filled."""
    if length > SMALL:
        large[nl] = start
        large[nl + 1] = length
        nl += 2
    else:
        ns = small_run(small, ns, start, length, in_scratch)
    return nl, ns


@numba.njit
def buckets(large, nl, small, ns, copy, nc, start, lens, in_scratch):
    """Files the BUCKETS buckets lens of the segment that starts at start and was split into the
    scratch array or not, in order: those longer than SMALL and between pivots as segments, the
    rest gathered into runs to sort in one block (a run of neighbouring buckets sorted is
    sorted; see gathers), and the equal keys of longer buckets as final, copied back where they
    lie in the scratch array. Returns large's, small's and copy's entries filled."""
    run = start
    run_len = 0
    nxt = start
    for bucket in range(BUCKETS):
        length = int64(lens[bucket])
        if not gathers(run_len, length):
            ns = small_run(small, ns, run, run_len, in_scratch)
            run = nxt
            run_len = 0
        if length <= SMALL:
            run_len += length
        elif bucket % 2 == 0:
            large[nl] = nxt
            large[nl + 1] = length
            nl += 2
            run = nxt + length
        else:
            if in_scratch:
                nc = push_chunks(copy, nc, nxt, length, 0)
            run = nxt + length
        nxt += length
    ns = small_run(small, ns, run, run_len, in_scratch)
    return nl, ns, nc


@numba.njit
def check_split(length, lens):
    """Whether the bucket counts lens split a segment of length keys into buckets that add up to
    it, each between pivots smaller than it: counts that say otherwise come from kernels that
    went wrong, and would make the sort loop forever."""
    total = int64(0)
    for bucket in range(BUCKETS):
        total += int64(lens[bucket])
        if bucket % 2 == 0 and int64(lens[bucket]) >= length:
            return False
    return total == length


@numba.njit
def chunk_table(segments):
    """qs_count's and qs_scatter's table: the rows (first key, keys, segment) of the chunks of
    CHUNK keys of the segments (start, length)."""
    rows = 0
    for i in range(segments.size // 2):
        rows += (int64(segments[2 * i + 1]) + CHUNK - 1) // CHUNK
    table = np.empty(3 * rows, np.uint32)
    filled = 0
    for i in range(segments.size // 2):
        filled = push_chunks(table, filled, int64(segments[2 * i]), int64(segments[2 * i + 1]), i)
    return table


@numba.njit
def plan_pass(segments, counts, in_scratch):
    """After a pass that split the segments (start, length) into the scratch array or not, with
    their bucket counts: the next pass's segments, the runs to sort and the chunks to copy back
    (see buckets), and -1, or the index of the first segment whose counts fail check_split (with
    the tables empty)."""
    nsegs = segments.size // 2
    total = 0
    for i in range(nsegs):
        total += int64(segments[2 * i + 1])
    large = np.empty(BUCKETS * nsegs, np.uint32)
    small = np.empty(3 * (BUCKETS + 1) * nsegs, np.uint32)
    copy = np.empty(3 * (total // CHUNK + PARTS * nsegs), np.uint32)
    nl = ns = nc = 0
    for i in range(nsegs):
        start = int64(segments[2 * i])
        length = int64(segments[2 * i + 1])
        lens = counts[BUCKETS * i:BUCKETS * (i + 1)]
        if not check_split(length, lens):
            return large[:0], small[:0], copy[:0], i
        nl, ns, nc = buckets(large, nl, small, ns, copy, nc, start, lens, in_scratch)
    return large[:nl], small[:ns], copy[:nc], -1


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
        large = np.empty(2, np.uint32)
        small = np.empty(3, np.uint32)
        nl, ns = segment(large, 0, small, 0, 0, self.n, False)
        large = large[:nl]
        smalls = [small[:ns]]
        copies = []
        in_scratch = False  # where the segments still to split lie
        passes = 0
        while large.size:
            passes += 1
            nsegs = large.size // 2
            chunks = chunk_table(large)
            blocks = chunks.size // 3
            src, dst = (self.scratch, keys) if in_scratch else (keys, self.scratch)
            segments_d = self.upload("segments", large)
            chunks_d = self.upload("chunks", chunks)
            pivots_d = self.buffer("pivots", PARTS * nsegs)
            counts_d = self.buffer("counts", BUCKETS * nsegs)
            cursors_d = self.buffer("cursors", BUCKETS * nsegs)
            qs_pivots[nsegs, PIVOT_THREADS](src, segments_d, pivots_d, counts_d, cursors_d)
            qs_count[blocks, SPLIT_THREADS](src, chunks_d, pivots_d, counts_d)
            qs_scatter[blocks, SPLIT_THREADS](src, segments_d, chunks_d, pivots_d, counts_d,
                                              cursors_d, dst)
            # Each segment is now, in the other buffer, its buckets in order.
            in_scratch = not in_scratch
            counts = counts_d.copy_to_host()
            segments = large
            large, small, copy, bad = plan_pass(segments, counts, in_scratch)
            if bad >= 0:
                start = int(segments[2 * bad])
                end = start + int(segments[2 * bad + 1])
                lens = counts[BUCKETS * bad:BUCKETS * (bad + 1)].tolist()
                raise RuntimeError(
                    f"qs_count: the segment {start}..{end} came back split into buckets of "
                    f"{lens} keys, which do not add up to it, or leave no key equal to a pivot")
            smalls.append(small)
            copies.append(copy)
        copy_table = np.concatenate(copies) if copies else np.empty(0, np.uint32)
        if copy_table.size:
            qs_copy[copy_table.size // 3, QS_THREADS](keys, self.scratch,
                                                      self.upload("copy", copy_table))
        small_table = np.concatenate(smalls)
        if small_table.size:
            qs_sort_small[small_table.size // 3, QS_THREADS](
                keys, self.scratch, self.upload("small", small_table))
        return passes
