"""The quicksort reference program with Numba's `cuda.jit`: the peer of gpu-kernels/src/quicksort.rs
and of the CUDA C++ version in cuda/peers.cu, the same algorithm written the way a Numba user
would (kernels in `cuda.jit`, the host's bookkeeping in `numba.njit`).

Each pass partitions every segment longer than SMALL keys around the median of a 63-key sample
(one block per segment, which also sets the segment's two cursors to its ends), by chunks of
CHUNK keys: each block partitions its chunk in shared memory and writes it to the other buffer,
the keys below the pivot at the lower cursor and those above under the upper one, each cursor
moved by one atomic per chunk. Keys equal to the pivot are only counted: the room left between
the cursors is theirs, filled at the end. Segments of at most SMALL keys are finished by a
bitonic sort in shared memory.

    sorter = QuickSort(n)
    sorter.sort(device_keys)   # a uint32 device array of n keys, sorted in place
"""

import numba
import numpy as np
from numba import cuda, int64, uint32, uint64

QS_THREADS = 256
CHUNK = QS_THREADS * 16
SMALL = 1024
SAMPLES = 63
PIVOT_THREADS = 64
SCAN_GROUP = 16
SCAN_GROUPS = QS_THREADS // SCAN_GROUP
GROUP_SUMS = SCAN_GROUPS + 1  # the groups' exclusive sums and their total
# A thread's three counts (below, equal, above) packed in one 64-bit word, 21 bits each: a chunk
# has fewer than 2^21 keys, so one scan of the packed words scans all three.
COUNT_BITS = 21
MASK = np.uint64((1 << COUNT_BITS) - 1)
SHIFT_ABOVE = np.uint64(2 * COUNT_BITS)
ONE_BELOW = np.uint64(1)
ONE_EQUAL = np.uint64(1 << COUNT_BITS)
ONE_ABOVE = np.uint64(1 << (2 * COUNT_BITS))


@cuda.jit(device=True, inline=True)
def packed_one(v, pivot):
    """One key's packed count: 1 in the field of its side (below, equal, above the pivot)."""
    if v < pivot:
        return ONE_BELOW
    if v == pivot:
        return ONE_EQUAL
    return ONE_ABOVE


@cuda.jit
def qs_pivot(keys, segs, state):
    """Block b, for segment b (start, length in segs): state[3b:3b + 3] = its lower cursor, its
    upper cursor (its two ends) and its pivot, the median of 63 evenly spaced keys."""
    sample = cuda.shared.array(SAMPLES, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(segs[2 * b])
    length = int64(segs[2 * b + 1])
    if t < SAMPLES:
        sample[t] = keys[start + (length - 1) * t // (SAMPLES - 1)]
    cuda.syncthreads()
    if t < SAMPLES:
        v = sample[t]
        rank = 0
        for i in range(SAMPLES):
            w = sample[i]
            if w < v or (w == v and i < t):
                rank += 1
        if rank == SAMPLES // 2:
            state[3 * b] = start
            state[3 * b + 1] = start + length
            state[3 * b + 2] = v


@cuda.jit
def qs_partition(src, table, state, dst):
    """Block b: chunk b (first key, keys, segment in table) partitioned in shared memory, its
    keys below the pivot written at the segment's lower cursor, those above under its upper
    cursor, each cursor moved past them; keys equal to the pivot are not written."""
    chunk = cuda.shared.array(CHUNK, uint32)
    staged = cuda.shared.array(CHUNK, uint32)
    before = cuda.shared.array(QS_THREADS, uint64)
    groups = cuda.shared.array(GROUP_SUMS, uint64)
    runs = cuda.shared.array(2, int64)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    seg = int64(table[3 * b + 2])
    pivot = state[3 * seg + 2]
    packed = uint64(0)
    for k in range(t, n, QS_THREADS):
        v = src[start + k]
        chunk[k] = v
        packed += packed_one(v, pivot)
    before[t] = packed
    cuda.syncthreads()
    # An exclusive scan of the packed counts: each group of 16 threads by one thread, then the
    # groups' sums by thread 0, which also claims the chunk's room from the cursors.
    if t < SCAN_GROUPS:
        run = uint64(0)
        for i in range(t * SCAN_GROUP, (t + 1) * SCAN_GROUP):
            c = before[i]
            before[i] = run
            run += c
        groups[t] = run
    cuda.syncthreads()
    if t == 0:
        run = uint64(0)
        for g in range(SCAN_GROUPS):
            c = groups[g]
            groups[g] = run
            run += c
        groups[SCAN_GROUPS] = run
        below_n = uint32(run & MASK)
        above_n = uint32(run >> SHIFT_ABOVE)
        runs[0] = int64(cuda.atomic.add(state, 3 * seg, below_n))
        runs[1] = int64(cuda.atomic.sub(state, 3 * seg + 1, above_n)) - int64(above_n)
    cuda.syncthreads()
    mine = groups[t // SCAN_GROUP] + before[t]
    total = groups[SCAN_GROUPS]
    below = int64(total & MASK)
    kept = below + int64(total >> SHIFT_ABOVE)
    at_below = int64(mine & MASK)
    at_above = below + int64(mine >> SHIFT_ABOVE)
    for k in range(t, n, QS_THREADS):
        v = chunk[k]
        if v < pivot:
            staged[at_below] = v
            at_below += 1
        elif v > pivot:
            staged[at_above] = v
            at_above += 1
    cuda.syncthreads()
    o_below = runs[0]
    o_above = runs[1] - below
    for k in range(t, kept, QS_THREADS):
        if k < below:
            dst[o_below + k] = staged[k]
        else:
            dst[o_above + k] = staged[k]


@cuda.jit
def qs_fill(keys, table):
    """Block b: table[3b + 2] written to the keys of table row b (first key, keys)."""
    b = cuda.blockIdx.x
    start = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    value = table[3 * b + 2]
    for k in range(cuda.threadIdx.x, n, QS_THREADS):
        keys[start + k] = value


@cuda.jit
def qs_sort_small(keys, scratch, table):
    """Block b: the segment of table row b (first key, keys, in scratch?) sorted into keys by a
    bitonic sort in shared memory."""
    s = cuda.shared.array(SMALL, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(table[3 * b])
    length = int64(table[3 * b + 1])
    from_scratch = table[3 * b + 2] != 0
    n = 2
    while n < length:
        n *= 2
    for k in range(t, n, QS_THREADS):
        if k >= length:
            s[k] = 0xFFFFFFFF
        elif from_scratch:
            s[k] = scratch[start + k]
        else:
            s[k] = keys[start + k]
    cuda.syncthreads()
    size = 2
    while size <= n:
        stride = size // 2
        while stride > 0:
            for idx in range(t, n // 2, QS_THREADS):
                pos = ((idx & ~(stride - 1)) << 1) | (idx & (stride - 1))
                partner = pos + stride
                ascending = (pos & size) == 0
                x = s[pos]
                y = s[partner]
                if (x > y) == ascending:
                    s[pos] = y
                    s[partner] = x
            cuda.syncthreads()
            stride //= 2
        size *= 2
    for k in range(t, length, QS_THREADS):
        keys[start + k] = s[k]


@numba.njit
def chunk_table(runs):
    """The rows (first key, keys, tag) of the chunks of CHUNK keys of runs (start, length, tag)."""
    rows = 0
    for i in range(runs.size // 3):
        rows += (int64(runs[3 * i + 1]) + CHUNK - 1) // CHUNK
    table = np.empty(3 * rows, np.uint32)
    r = 0
    for i in range(runs.size // 3):
        first = int64(runs[3 * i])
        end = first + int64(runs[3 * i + 1])
        while first < end:
            table[3 * r] = first
            table[3 * r + 1] = min(CHUNK, end - first)
            table[3 * r + 2] = runs[3 * i + 2]
            r += 1
            first += CHUNK
    return table


@numba.njit
def split(segs, state, to_scratch):
    """After a pass, from its segments (start, length) and their cursors and pivots: the
    segments still to partition (start, length), the small ones (start, length, in scratch?)
    and the runs equal to a pivot (start, length, pivot)."""
    nsegs = segs.size // 2
    large = np.empty(4 * nsegs, np.uint32)
    small = np.empty(6 * nsegs, np.uint32)
    equal = np.empty(3 * nsegs, np.uint32)
    nl = ns = ne = 0
    for i in range(nsegs):
        start = int64(segs[2 * i])
        end = start + int64(segs[2 * i + 1])
        lower = int64(state[3 * i])
        upper = int64(state[3 * i + 1])
        for part in range(2):
            first = start if part == 0 else upper
            n = lower - start if part == 0 else end - upper
            if n > SMALL:
                large[nl] = first
                large[nl + 1] = n
                nl += 2
            elif n > 1 or (n == 1 and to_scratch):
                small[ns] = first
                small[ns + 1] = n
                small[ns + 2] = 1 if to_scratch else 0
                ns += 3
        if upper > lower:
            equal[ne] = lower
            equal[ne + 1] = upper - lower
            equal[ne + 2] = state[3 * i + 2]
            ne += 3
    return large[:nl], small[:ns], equal[:ne]


class QuickSort:
    """Sorts uint32 device arrays of n keys in place, keeping its device buffers from sort to
    sort (as the CUDA C++ peer does)."""

    def __init__(self, n):
        self.n = n
        self.scratch = cuda.device_array(max(n, 1), np.uint32)
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
        if keys.size != self.n:
            raise ValueError(f"QuickSort({self.n}) cannot sort {keys.size} keys")
        n = self.n
        large = np.array([0, n], np.uint32) if n > SMALL else np.empty(0, np.uint32)
        smalls = [np.array([0, n, 0], np.uint32)] if 1 < n <= SMALL else []
        equals = []
        in_scratch = False  # where the segments still to partition lie
        while large.size:
            nsegs = large.size // 2
            table = chunk_table(np.column_stack((large[0::2], large[1::2],
                                                 np.arange(nsegs, dtype=np.uint32))).ravel())
            src, dst = (self.scratch, keys) if in_scratch else (keys, self.scratch)
            segs_d = self.upload("segs", large)
            table_d = self.upload("table", table)
            state_d = self.buffer("state", 3 * nsegs)
            qs_pivot[nsegs, PIVOT_THREADS](src, segs_d, state_d)
            qs_partition[table.size // 3, QS_THREADS](src, table_d, state_d, dst)
            large, small, equal = split(large, state_d.copy_to_host(), not in_scratch)
            smalls.append(small)
            equals.append(equal)
            in_scratch = not in_scratch
        equal_table = chunk_table(np.concatenate(equals)) if equals else np.empty(0, np.uint32)
        if equal_table.size:
            qs_fill[equal_table.size // 3, QS_THREADS](keys, self.upload("equal", equal_table))
        small_table = np.concatenate(smalls) if smalls else np.empty(0, np.uint32)
        if small_table.size:
            qs_sort_small[small_table.size // 3, QS_THREADS](
                keys, self.scratch, self.upload("small", small_table))
