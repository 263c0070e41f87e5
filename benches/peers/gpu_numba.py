#!/usr/bin/env python3
"""The reference programs with Numba's `cuda.jit` on a GPU: peers of `examples/device_bench.rs`.

Written from the programs' descriptions, on the inputs every implementation builds the same way
(see device_bench.rs), with the same check values: add-list (also as
`@vectorize(target='cuda')`, and four elements per thread as our add_wide), smooth (also in strips of rows and in strips of words of four
pixels, as our smooth_strips and smooth_words),
integrate2d (shared-memory reduction), quicksort (our sample-pivot algorithm,
numba_quicksort.py: Numba has no sort of its own) and matmul (tiled, TPB = 16).

Each result is one JSON line: {"impl", "program", "size", "kernel_ms", "e2e_ms", "bytes",
"check"}; kernel_ms is the median time between CUDA events around the launch over --reps runs
after a warm-up, e2e_ms the median wall time from host inputs to host results.

    python3 benches/peers/gpu_numba.py [--reps 20]
"""

import argparse
import math
import statistics
import sys

try:
    import numpy as np

    # NumPy 2.5 removed `np.row_stack`, an alias of `np.vstack` that numba-cuda releases built
    # for older NumPy still register an overload for when they compile a first kernel.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    import numba
    from numba import cuda
except ImportError as e:
    print(f"gpu_numba: skipped: the Python module `{e.name}` is not installed")
    sys.exit(0)

from numba_quicksort import QuickSort
from peer_common import (emit, integrate_check, matmul_inputs, smooth_check, smooth_input,
                         sort_check, sort_keys, sum_check, wall_ms)

TPB = 16
INTEGRATE_TPB = 256
STRIP_ROWS, STRIP_THREADS = 8, 128
WORD_THREADS = 128
# smooth_words's constants, unsigned so that Numba keeps its arithmetic unsigned.
LANES, BIAS, BYTE = np.uint32(0x00FF00FF), np.uint32(0x80808080), np.uint32(0xFF)
LOW, HIGH, MEAN, SIGN = np.uint32(0xFFFF), np.uint32(0xFF000000), np.uint32(7282), np.uint32(0x80)


def kernel_ms(f, reps, setup=None):
    """The median time of `f` between CUDA events; `setup` runs before each, outside them."""
    if setup:
        setup()
    f()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        if setup:
            setup()
        start, end = cuda.event(), cuda.event()
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@cuda.jit
def add_kernel(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


@cuda.jit
def add_wide_kernel(a, b, c):
    """Four elements per thread, `gridsize` apart (our add_wide)."""
    n = c.size
    s = cuda.gridsize(1)
    i = cuda.grid(1)
    if i + 3 * s < n:
        a0, a1, a2, a3 = a[i], a[i + s], a[i + 2 * s], a[i + 3 * s]
        b0, b1, b2, b3 = b[i], b[i + s], b[i + 2 * s], b[i + 3 * s]
        c[i] = a0 + b0
        c[i + s] = a1 + b1
        c[i + 2 * s] = a2 + b2
        c[i + 3 * s] = a3 + b3
        i += 4 * s
    while i < n:
        c[i] = a[i] + b[i]
        i += s


def make_add_ufunc():
    """The original program's form; compiled when decorated, so only once a GPU is known."""

    @numba.vectorize(["float32(float32, float32)"], target="cuda")
    def add_ufunc(a, b):
        return a + b

    return add_ufunc


@cuda.jit
def smooth_kernel(x, out):
    j, i = cuda.grid(2)
    n, m = x.shape
    if 1 <= i and i + 1 < n and 1 <= j and j + 1 < m:
        s = (numba.int32(x[i - 1, j - 1]) + numba.int32(x[i - 1, j]) + numba.int32(x[i - 1, j + 1])
             + numba.int32(x[i, j - 1]) + numba.int32(x[i, j]) + numba.int32(x[i, j + 1])
             + numba.int32(x[i + 1, j - 1]) + numba.int32(x[i + 1, j]) + numba.int32(x[i + 1, j + 1]))
        out[i, j] = s // 9


@cuda.jit(device=True)
def row_sum(x, i, j):
    """The sum of row i's three bytes around column j."""
    return numba.int32(x[i, j - 1]) + numba.int32(x[i, j]) + numba.int32(x[i, j + 1])


@cuda.jit
def smooth_strips_kernel(x, out):
    """smooth with each thread down one column of a strip of STRIP_ROWS rows, each row's three
    bytes summed once for the three pixels that use them."""
    j, strip = cuda.grid(2)
    n, m = x.shape
    first = 1 + strip * STRIP_ROWS
    if 1 <= j and j + 1 < m and first + 1 < n:
        above = row_sum(x, first - 1, j)
        here = row_sum(x, first, j)
        for i in range(first, min(first + STRIP_ROWS, n - 1)):
            below = row_sum(x, i + 1, j)
            out[i, j] = (above + here + below) // 9
            above = here
            here = below


@cuda.jit(device=True)
def word_lanes(x, i, left, j, right):
    """Row i's three-pixel sums for the four pixels of word j, bytes biased by 128: pixels 0
    and 2 in the 16-bit lanes of the first result, 1 and 3 of the second."""
    l, c, r = x[i, left] ^ BIAS, x[i, j] ^ BIAS, x[i, right] ^ BIAS
    middle = (c & LANES) + ((c >> 8) & LANES)
    return (middle + (((c << 8) | (l >> 24)) & LANES),
            middle + (((c >> 16) | (r << 16)) & LANES))


@cuda.jit(device=True)
def lane_mean(s):
    """floor(s / 9) - 128 as a byte, for a biased nine-pixel sum s."""
    return ((s * MEAN) >> 16) ^ SIGN


@cuda.jit
def smooth_words_kernel(x, out):
    """smooth_strips over the image viewed as uint32 words of four pixels: three word loads per
    row, the sums two pixels at a time in 16-bit lanes; the words at the sides keep their border
    byte."""
    j, strip = cuda.grid(2)
    n, w = x.shape
    first = 1 + strip * STRIP_ROWS
    if j < w and first + 1 < n:
        left = j - 1 if j > 0 else j
        right = j + 1 if j + 1 < w else j
        keep = (BYTE if j == 0 else np.uint32(0)) | (HIGH if j + 1 == w else np.uint32(0))
        ea, oa = word_lanes(x, first - 1, left, j, right)
        eh, oh = word_lanes(x, first, left, j, right)
        for i in range(first, min(first + STRIP_ROWS, n - 1)):
            eb, ob = word_lanes(x, i + 1, left, j, right)
            even, odd = ea + eh + eb, oa + oh + ob
            p = (lane_mean(even & LOW) | (lane_mean(odd & LOW) << 8)
                 | (lane_mean(even >> 16) << 16) | (lane_mean(odd >> 16) << 24))
            if keep != 0:
                p = (p & ~keep) | (out[i, j] & keep)
            out[i, j] = p
            ea, oa, eh, oh = eh, oh, eb, ob


@cuda.jit
def integrate_kernel(n, sums):
    partial = cuda.shared.array(INTEGRATE_TPB, numba.float64)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    h = math.pi / n
    acc = 0.0
    if i < n:
        x = (i + 0.5) * h
        for j in range(n):
            acc += math.sin(x + (j + 0.5) * h)
        acc *= h * h
    partial[t] = acc
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        sums[cuda.blockIdx.x] = partial[0]


@cuda.jit
def matmul_kernel(a, b, c):
    sa = cuda.shared.array((TPB, TPB), numba.float32)
    sb = cuda.shared.array((TPB, TPB), numba.float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n, k = a.shape
    m = b.shape[1]
    acc = numba.float32(0.0)
    for t in range((k + TPB - 1) // TPB):
        sa[ty, tx] = a[row, t * TPB + tx] if row < n and t * TPB + tx < k else 0.0
        sb[ty, tx] = b[t * TPB + ty, col] if col < m and t * TPB + ty < k else 0.0
        cuda.syncthreads()
        for q in range(TPB):
            acc += sa[ty, q] * sb[q, tx]
        cuda.syncthreads()
    if row < n and col < m:
        c[row, col] = acc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--small", action="store_true",
                   help="small sizes, to try the script under NUMBA_ENABLE_CUDASIM=1")
    args = p.parse_args()
    sizes = ((4096, 32, 512, 32, 3000) if args.small
             else (100_000_000, 10_000, 102_400, 4096, 1 << 26))
    if not cuda.is_available():
        print("gpu_numba: skipped: no CUDA GPU is usable from Numba")
        return
    reps = args.reps

    n = sizes[0]
    ones = np.ones(n, dtype=np.float32)
    da, db = cuda.to_device(ones), cuda.to_device(ones)
    dc = cuda.device_array_like(da)
    blocks = (n + 255) // 256
    k = kernel_ms(lambda: add_kernel[blocks, 256](da, db, dc), reps)
    out = {}

    def add_e2e():
        a, b = cuda.to_device(ones), cuda.to_device(ones)
        c = cuda.device_array_like(a)
        add_kernel[blocks, 256](a, b, c)
        out["c"] = c.copy_to_host()

    e = wall_ms(add_e2e, min(reps, 5))
    emit("numba", "add", f"{n} f32", k, e, 12.0 * n, sum_check(out['c'], 1))
    wide_blocks = ((n + 3) // 4 + 255) // 256
    k = kernel_ms(lambda: add_wide_kernel[wide_blocks, 256](da, db, dc), reps)

    def add_wide_e2e():
        a, b = cuda.to_device(ones), cuda.to_device(ones)
        c = cuda.to_device(np.zeros(n, dtype=np.float32))
        add_wide_kernel[wide_blocks, 256](a, b, c)
        out["c"] = c.copy_to_host()

    e = wall_ms(add_wide_e2e, min(reps, 5))
    emit("numba", "add-wide", f"{n} f32", k, e, 12.0 * n, sum_check(out['c'], 1))
    if not args.small:  # the simulator has no @vectorize(target='cuda')
        add_ufunc = make_add_ufunc()
        k = kernel_ms(lambda: add_ufunc(da, db, out=dc), reps)
        e = wall_ms(lambda: out.update(c=add_ufunc(ones, ones)), min(reps, 5))
        emit("numba @vectorize", "add", f"{n} f32, @vectorize", k, e, 12.0 * n,
             sum_check(out["c"], 1))

    n = sizes[1]
    x = smooth_input(n)
    dx = cuda.to_device(x)
    dout = cuda.to_device(np.zeros_like(x))
    grid = ((n + 15) // 16, (n + 15) // 16)
    k = kernel_ms(lambda: smooth_kernel[grid, (16, 16)](dx, dout), reps)

    def smooth_e2e():
        d = cuda.to_device(x)
        o = cuda.to_device(np.zeros_like(x))
        smooth_kernel[grid, (16, 16)](d, o)
        out["s"] = o.copy_to_host()

    e = wall_ms(smooth_e2e, min(reps, 5))
    emit("numba", "smooth", f"{n}x{n} i8", k, e, 2.0 * n * n, smooth_check(out["s"]))

    grid = ((n + STRIP_THREADS - 1) // STRIP_THREADS,
            max(1, (n - 2 + STRIP_ROWS - 1) // STRIP_ROWS))
    dout = cuda.to_device(np.zeros_like(x))
    k = kernel_ms(lambda: smooth_strips_kernel[grid, (STRIP_THREADS, 1)](dx, dout), reps)
    emit("numba", "smooth-strips", f"{n}x{n} i8, strips of {STRIP_ROWS} rows", k, None,
         2.0 * n * n, smooth_check(dout.copy_to_host()))

    # The same bytes as words, as Numba sees an array's bytes as another type.
    grid = ((n // 4 + WORD_THREADS - 1) // WORD_THREADS, grid[1])
    dx_words = dx.view(np.uint32)
    dout = cuda.to_device(np.zeros_like(x))
    dout_words = dout.view(np.uint32)
    k = kernel_ms(lambda: smooth_words_kernel[grid, (WORD_THREADS, 1)](dx_words, dout_words), reps)
    emit("numba", "smooth-words", f"{n}x{n} i8 as u32 words, strips of {STRIP_ROWS} rows", k,
         None, 2.0 * n * n, smooth_check(dout.copy_to_host()))

    n = sizes[2]
    blocks = (n + INTEGRATE_TPB - 1) // INTEGRATE_TPB
    sums = cuda.device_array(blocks, dtype=np.float64)
    k = kernel_ms(lambda: integrate_kernel[blocks, INTEGRATE_TPB](n, sums), reps)

    def integrate_e2e():
        s = cuda.device_array(blocks, dtype=np.float64)
        integrate_kernel[blocks, INTEGRATE_TPB](n, s)
        out["v"] = float(np.sum(s.copy_to_host()))

    e = wall_ms(integrate_e2e, min(reps, 5))
    emit("numba", "integrate2d", f"n = {n}, shared", k, e, None, integrate_check(out["v"]))

    n = sizes[3]
    a, b = matmul_inputs(n)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dc = cuda.device_array((n, n), dtype=np.float32)
    grid = ((n + TPB - 1) // TPB, (n + TPB - 1) // TPB)
    k = kernel_ms(lambda: matmul_kernel[grid, (TPB, TPB)](da, db, dc), min(reps, 10))

    def matmul_e2e():
        x, y = cuda.to_device(a), cuda.to_device(b)
        z = cuda.device_array((n, n), dtype=np.float32)
        matmul_kernel[grid, (TPB, TPB)](x, y, z)
        out["m"] = z.copy_to_host()

    e = wall_ms(matmul_e2e, 3)
    emit("numba", "matmul", f"{n}x{n} f32", k, e, None, sum_check(out['m'], 4))

    # The whole sort between the events, host bookkeeping included, as for ours and CUDA C++.
    n = sizes[4]
    keys = sort_keys(n)
    fresh = cuda.to_device(keys)
    dk = cuda.device_array_like(fresh)
    sorter = QuickSort(n)
    k = kernel_ms(lambda: sorter.sort(dk), min(reps, 5), setup=lambda: dk.copy_to_device(fresh))

    def sort_e2e():
        d = cuda.to_device(keys)
        sorter.sort(d)
        out["q"] = d.copy_to_host()

    e = wall_ms(sort_e2e, 3)
    emit("numba", "quicksort", f"{n} u32", k, e, None, sort_check(out["q"]))


if __name__ == "__main__":
    main()
