"""The quicksort reference program with Numba's `cuda.jit`: the peer of gpu-kernels/src/quicksort.rs
and of the CUDA C++ version in cuda/peers.cu, the same algorithm written the way a Numba user
would (kernels in `cuda.jit`, the host's bookkeeping in `numba.njit`).

Each pass partitions every segment longer than SMALL keys around the median of a 63-key sample
(one block per segment), by chunks of CHUNK keys: one kernel counts each chunk's keys below, equal
to and above the pivot, the host turns the counts into offsets, and a second kernel partitions
each chunk in shared memory and writes it to the other buffer as three runs. Segments of at most
SMALL keys are finished by a bitonic sort in shared memory, and the runs equal to a pivot that
were left in the scratch buffer are copied back.

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
SHIFT_EQUAL = np.uint64(COUNT_BITS)
SHIFT_ABOVE = np.uint64(2 * COUNT_BITS)
ONE_BELOW = np.uint64(1)
ONE_EQUAL = np.uint64(1 << COUNT_BITS)
ONE_ABOVE = np.uint64(1 << (2 * COUNT_BITS))


@cuda.jit(device=True, inline=True)
def side_of(v, pivot):
    """0 below the pivot, 1 equal, 2 above."""
    if v < pivot:
        return 0
    if v == pivot:
        return 1
    return 2


@cuda.jit(device=True, inline=True)
def packed_one(v, pivot):
    """One key's packed count: 1 in the field of its side."""
    if v < pivot:
        return ONE_BELOW
    if v == pivot:
        return ONE_EQUAL
    return ONE_ABOVE


@cuda.jit
def qs_pivot(keys, segs, pivots):
    """Block b: the median of 63 evenly spaced keys of segment b (start, length in segs)."""
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
            pivots[b] = v


@cuda.jit
def qs_count(keys, table, pivots, counts):
    """Block b: how many keys of chunk b (first key, keys, segment in table) fall on each side."""
    local = cuda.shared.array(3, uint32)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    if t < 3:
        local[t] = 0
    cuda.syncthreads()
    start = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    pivot = pivots[table[3 * b + 2]]
    packed = uint64(0)
    for k in range(t, n, QS_THREADS):
        packed += packed_one(keys[start + k], pivot)
    cuda.atomic.add(local, 0, uint32(packed & MASK))
    cuda.atomic.add(local, 1, uint32((packed >> SHIFT_EQUAL) & MASK))
    cuda.atomic.add(local, 2, uint32(packed >> SHIFT_ABOVE))
    cuda.syncthreads()
    if t < 3:
        counts[3 * b + t] = local[t]


@cuda.jit
def qs_scatter(src, table, pivots, offsets, dst):
    """Block b: chunk b partitioned in shared memory, its three runs written at its offsets."""
    chunk = cuda.shared.array(CHUNK, uint32)
    staged = cuda.shared.array(CHUNK, uint32)
    before = cuda.shared.array(QS_THREADS, uint64)
    groups = cuda.shared.array(GROUP_SUMS, uint64)
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    start = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    pivot = pivots[table[3 * b + 2]]
    packed = uint64(0)
    for k in range(t, n, QS_THREADS):
        v = src[start + k]
        chunk[k] = v
        packed += packed_one(v, pivot)
    before[t] = packed
    cuda.syncthreads()
    # An exclusive scan of the packed counts: each group of 16 threads by one thread, then the
    # groups' sums by thread 0.
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
    cuda.syncthreads()
    mine = groups[t // SCAN_GROUP] + before[t]
    total = groups[SCAN_GROUPS]
    below = int64(total & MASK)
    equal = int64((total >> SHIFT_EQUAL) & MASK)
    at = cuda.local.array(3, int64)
    at[0] = int64(mine & MASK)
    at[1] = below + int64((mine >> SHIFT_EQUAL) & MASK)
    at[2] = below + equal + int64(mine >> SHIFT_ABOVE)
    for k in range(t, n, QS_THREADS):
        v = chunk[k]
        side = side_of(v, pivot)
        staged[at[side]] = v
        at[side] += 1
    cuda.syncthreads()
    o_below = int64(offsets[3 * b])
    o_equal = int64(offsets[3 * b + 1]) - below
    o_above = int64(offsets[3 * b + 2]) - below - equal
    for k in range(t, n, QS_THREADS):
        if k < below:
            dst[o_below + k] = staged[k]
        elif k < below + equal:
            dst[o_equal + k] = staged[k]
        else:
            dst[o_above + k] = staged[k]


@cuda.jit
def qs_copy_back(src, table, dst):
    """Block b: the run of table row b (first key, keys) copied from src to dst."""
    b = cuda.blockIdx.x
    start = int64(table[3 * b])
    n = int64(table[3 * b + 1])
    for k in range(cuda.threadIdx.x, n, QS_THREADS):
        dst[start + k] = src[start + k]


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
    """The rows (first key, keys, run) of the chunks of CHUNK keys of runs (start, length)."""
    rows = 0
    for i in range(runs.size // 2):
        rows += (int64(runs[2 * i + 1]) + CHUNK - 1) // CHUNK
    table = np.empty(3 * rows, np.uint32)
    r = 0
    for i in range(runs.size // 2):
        first = int64(runs[2 * i])
        end = first + int64(runs[2 * i + 1])
        while first < end:
            table[3 * r] = first
            table[3 * r + 1] = min(CHUNK, end - first)
            table[3 * r + 2] = i
            r += 1
            first += CHUNK
    return table


@numba.njit
def split(segs, counts, to_scratch):
    """After a pass's counts: each chunk's three output offsets, and what the pass leaves: the
    segments still to partition (start, length), the small ones (start, length, in scratch?) and
    the runs equal to a pivot that land in scratch (start, length)."""
    nsegs = segs.size // 2
    offsets = np.empty_like(counts)
    large = np.empty(4 * nsegs, np.uint32)
    small = np.empty(6 * nsegs, np.uint32)
    equal = np.empty(2 * nsegs, np.uint32)
    nl = ns = ne = 0
    b = 0
    for i in range(nsegs):
        s = int64(segs[2 * i])
        length = int64(segs[2 * i + 1])
        nb = (length + CHUNK - 1) // CHUNK
        lt = int64(0)
        eq = int64(0)
        for j in range(b, b + nb):
            lt += counts[3 * j]
            eq += counts[3 * j + 1]
        at_below, at_equal, at_above = s, s + lt, s + lt + eq
        for j in range(b, b + nb):
            offsets[3 * j] = at_below
            offsets[3 * j + 1] = at_equal
            offsets[3 * j + 2] = at_above
            at_below += counts[3 * j]
            at_equal += counts[3 * j + 1]
            at_above += counts[3 * j + 2]
        for part in range(2):
            first = s if part == 0 else s + lt + eq
            n = lt if part == 0 else length - lt - eq
            if n > SMALL:
                large[nl] = first
                large[nl + 1] = n
                nl += 2
            elif n > 1 or (n == 1 and to_scratch):
                small[ns] = first
                small[ns + 1] = n
                small[ns + 2] = 1 if to_scratch else 0
                ns += 3
        if to_scratch and eq > 0:
            equal[ne] = s + lt
            equal[ne + 1] = eq
            ne += 2
        b += nb
    return offsets, large[:nl], small[:ns], equal[:ne]


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
            table = chunk_table(large)
            blocks = table.size // 3
            src, dst = (self.scratch, keys) if in_scratch else (keys, self.scratch)
            segs_d = self.upload("segs", large)
            table_d = self.upload("table", table)
            pivots_d = self.buffer("pivots", nsegs)
            counts_d = self.buffer("counts", 3 * blocks)
            qs_pivot[nsegs, PIVOT_THREADS](src, segs_d, pivots_d)
            qs_count[blocks, QS_THREADS](src, table_d, pivots_d, counts_d)
            offsets, large, small, equal = split(large, counts_d.copy_to_host(), not in_scratch)
            smalls.append(small)
            equals.append(equal)
            qs_scatter[blocks, QS_THREADS](src, table_d, pivots_d, self.upload("offsets", offsets), dst)
            in_scratch = not in_scratch
        equal_table = chunk_table(np.concatenate(equals)) if equals else np.empty(0, np.uint32)
        if equal_table.size:
            qs_copy_back[equal_table.size // 3, QS_THREADS](
                self.scratch, self.upload("equal", equal_table), keys)
        small_table = np.concatenate(smalls) if smalls else np.empty(0, np.uint32)
        if small_table.size:
            qs_sort_small[small_table.size // 3, QS_THREADS](
                keys, self.scratch, self.upload("small", small_table))
