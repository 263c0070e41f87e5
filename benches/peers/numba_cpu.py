#!/usr/bin/env python3
"""The five reference programs with Numba on the CPU: the peers of `cargo bench --bench cpu_backend`.

Three peers, written from the programs' descriptions:

- `numba.njit(parallel=True)` at the sizes of the Rust benchmarks: add-list over 10^7 float32, the
  3x3 mean stencil (`@numba.stencil`) on a 10000 x 10000 int8 image, the 5x5 Gaussian blur
  (`@numba.stencil` with loops and a neighborhood) on a 10000 x 10000 uint8 image, the 7-point
  Laplacian (`@numba.stencil`) on a 256^3 float32 grid, integrate2d with n = 2048,
  matmul 512 x 512 float32 (a `prange` over rows), quicksort of 2^22 uint32 (`np.sort` in `njit`:
  Numba has no parallel sort);
- SciPy's `ndimage` filters for the stencil programs, where SciPy is installed (one thread);
- Numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`), which runs `cuda.jit` kernels thread by
  thread in Python, at small sizes (it is about ten thousand times slower): the GPU peer's
  kernels (gpu_numba.py, numba_quicksort.py) for add-list, smooth, integrate2d (shared-memory
  reduction), matmul (tiled, TPB = 16) and quicksort (our sample-pivot algorithm).

Each result is one JSON line on stdout: {"peer", "program", "size", "elements", "ms"}; `ms` is
the median of the timed runs after a warm-up, and every result is checked against numpy first.
Without numba it says so on one line and exits 0.

    python3 benches/peers/numba_cpu.py [--reps 7] [--no-simulator] [--only PROGRAM]
"""

import argparse
import json
import math
import os
import sys

# The simulator is chosen when numba.cuda is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

try:
    import numpy as np
    import numba
except ImportError as e:  # numba (and numpy, its dependency) are optional here
    print(
        f"numba_cpu: skipped: the Python module `{e.name}` is not installed (pip install numba)"
    )
    sys.exit(0)

from peer_common import matmul_inputs, smooth_input, smooth_reference, wall_ms

PROGRAMS = ("add", "smooth", "gaussian", "laplace3d", "integrate2d", "matmul", "quicksort")

def report(peer, program, size, elements, ms):
    line = {"peer": peer, "program": program, "size": size, "elements": elements, "ms": ms}
    print(json.dumps(line), flush=True)


# --- numba.njit(parallel=True) -------------------------------------------------------------


@numba.njit(parallel=True)
def add_njit(a, b, c):
    for i in numba.prange(c.size):
        c[i] = a[i] + b[i]


@numba.stencil
def mean3x3(a):
    return np.int8(
        (
            np.int32(a[-1, -1])
            + np.int32(a[-1, 0])
            + np.int32(a[-1, 1])
            + np.int32(a[0, -1])
            + np.int32(a[0, 0])
            + np.int32(a[0, 1])
            + np.int32(a[1, -1])
            + np.int32(a[1, 0])
            + np.int32(a[1, 1])
        )
        // 9
    )


@numba.njit(parallel=True)
def smooth_njit(a):
    return mean3x3(a)


@numba.njit(parallel=True)
def integrate2d_njit(n):
    h = math.pi / n
    total = 0.0
    for i in numba.prange(n):
        x = (i + 0.5) * h
        row = 0.0
        for j in range(n):
            row += math.sin(x + (j + 0.5) * h)
        total += row * h * h
    return total


@numba.njit(parallel=True)
def matmul_njit(a, b, c):
    n, k = a.shape
    m = b.shape[1]
    for i in numba.prange(n):
        for j in range(m):
            c[i, j] = 0.0
        for q in range(k):
            aiq = a[i, q]
            for j in range(m):
                c[i, j] += aiq * b[q, j]


@numba.njit
def sort_njit(keys):
    return np.sort(keys)


# The weights of the 5x5 Gaussian blur: the outer product of the binomial row, summing to 256.
GAUSS5 = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]).astype(np.uint32)


@numba.stencil(neighborhood=((-2, 2), (-2, 2)))
def gauss5x5(a):
    s = np.uint32(128)
    for i in range(-2, 3):
        for j in range(-2, 3):
            s += GAUSS5[i + 2, j + 2] * np.uint32(a[i, j])
    return np.uint8(s >> 8)


@numba.njit(parallel=True)
def gaussian_njit(a):
    return gauss5x5(a)


@numba.stencil
def laplace7(u):
    return u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] - 6.0 * u[0, 0, 0]


@numba.njit(parallel=True)
def laplace_njit(u):
    return laplace7(u)


def laplace_reference(u):
    """The Laplacian with numpy, the border zero."""
    out = np.zeros_like(u)
    c = u[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = (
        u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
        + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - np.float32(6.0) * c
    )
    return out


def gaussian_reference(x):
    """The blur with numpy, the border zero."""
    n, m = x.shape
    s = np.full((n - 4, m - 4), 128, dtype=np.uint32)
    for i in range(5):
        for j in range(5):
            s += GAUSS5[i, j] * x[i : n - 4 + i, j : m - 4 + j].astype(np.uint32)
    out = np.zeros_like(x)
    out[2 : n - 2, 2 : m - 2] = (s >> 8).astype(np.uint8)
    return out


def njit_peers(only, reps):
    rng = np.random.default_rng(1)
    peer = "numba.njit(parallel)"
    if "add" in only:
        n = 10_000_000
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = np.zeros_like(a)
        add_njit(a, b, c)
        assert np.array_equal(c, a + b), "add: numba and numpy disagree"
        report(peer, "add", "10^7 f32", n, wall_ms(lambda: add_njit(a, b, c), reps))
    if "smooth" in only:
        n = 10_000
        x = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
        assert np.array_equal(smooth_njit(x), smooth_reference(x)), "smooth: numba and numpy disagree"
        report(peer, "smooth", "10000^2 i8", n * n, wall_ms(lambda: smooth_njit(x), reps))
    if "gaussian" in only:
        n = 10_000
        x = rng.integers(0, 256, size=(n, n), dtype=np.uint8)
        assert np.array_equal(gaussian_njit(x), gaussian_reference(x)), "gaussian: numba and numpy disagree"
        report(peer, "gaussian", "10000^2 u8", n * n, wall_ms(lambda: gaussian_njit(x), reps))
    if "laplace3d" in only:
        n = 256
        u = (np.arange(n * n * n) % 13).astype(np.float32).reshape(n, n, n)
        assert np.allclose(laplace_njit(u), laplace_reference(u)), "laplace3d: numba and numpy disagree"
        report(peer, "laplace3d", "256^3 f32", n * n * n, wall_ms(lambda: laplace_njit(u), reps))
    if "integrate2d" in only:
        n = 2048
        v = integrate2d_njit(n)
        assert abs(v) < 1e-5, f"integrate2d: {v} is not close to 0"
        report(peer, "integrate2d", "n = 2048", n * n, wall_ms(lambda: integrate2d_njit(n), reps))
    if "matmul" in only:
        n = 512
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        c = np.zeros_like(a)
        matmul_njit(a, b, c)
        assert np.allclose(c, a @ b, rtol=1e-4, atol=1e-3), "matmul: numba and numpy disagree"
        report(peer, "matmul", "512^2 f32", n * n, wall_ms(lambda: matmul_njit(a, b, c), reps))
    if "quicksort" in only:
        n = 1 << 22
        keys = rng.integers(0, 2**32, size=n, dtype=np.uint32)
        assert np.array_equal(sort_njit(keys), np.sort(keys)), "quicksort: numba and numpy disagree"
        report(peer, "quicksort", "2^22 u32 (serial np.sort)", n, wall_ms(lambda: sort_njit(keys), reps))


# --- SciPy's ndimage filters -------------------------------------------------------------


def scipy_peers(only, reps):
    """The stencil programs as SciPy's `ndimage` filters (one thread, in C), where SciPy is
    installed: the 3x3 mean and the 5x5 blur as integer `correlate`s with their weights, then
    the programs' division (`uniform_filter` rounds twice, once per axis), the Laplacian as
    `laplace`; the border as `mode="constant"`, zeros beyond the image. Each is checked against
    numpy in the interior."""
    try:
        from scipy import ndimage
    except ImportError:
        print("scipy.ndimage peers skipped: scipy is not installed", file=sys.stderr)
        return
    rng = np.random.default_rng(1)
    peer = "scipy.ndimage"
    inner = (slice(1, -1),) * 2
    if "smooth" in only:
        n = 10_000
        x = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
        ones = np.ones((3, 3), dtype=np.int32)

        def mean():
            s = ndimage.correlate(x, ones, output=np.int32, mode="constant")
            return (s // 9).astype(np.int8)

        run = mean
        assert np.array_equal(run()[inner], smooth_reference(x)[inner]), "smooth: scipy and numpy disagree"
        report(peer, "smooth", "10000^2 i8", n * n, wall_ms(run, reps))
    if "gaussian" in only:
        n = 10_000
        x = rng.integers(0, 256, size=(n, n), dtype=np.uint8)
        weights = GAUSS5.astype(np.uint32)

        def blur():
            s = ndimage.correlate(x, weights, output=np.uint32, mode="constant")
            return ((s + 128) >> 8).astype(np.uint8)

        inner2 = (slice(2, -2),) * 2
        assert np.array_equal(blur()[inner2], gaussian_reference(x)[inner2]), "gaussian: scipy and numpy disagree"
        report(peer, "gaussian", "10000^2 u8", n * n, wall_ms(blur, reps))
    if "laplace3d" in only:
        n = 256
        u = (np.arange(n * n * n) % 13).astype(np.float32).reshape(n, n, n)
        run = lambda: ndimage.laplace(u, mode="constant")  # noqa: E731
        inner3 = (slice(1, -1),) * 3
        assert np.allclose(run()[inner3], laplace_reference(u)[inner3]), "laplace3d: scipy and numpy disagree"
        report(peer, "laplace3d", "256^3 f32", n * n * n, wall_ms(run, reps))


# --- Numba's CUDA simulator ----------------------------------------------------------------


def simulator_peers(only, reps):
    # The GPU peer's cuda.jit kernels, which the simulator runs (NUMBA_ENABLE_CUDASIM=1 above).
    import gpu_numba as g

    rng = np.random.default_rng(2)
    peer = "numba CUDA simulator"
    reps = min(reps, 3)
    if "add" in only:
        n = 4096
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = np.zeros_like(a)
        run = lambda: g.add_kernel[(n + 255) // 256, 256](a, b, c)  # noqa: E731
        run()
        assert np.array_equal(c, a + b), "add (simulator): wrong result"
        report(peer, "add", "4096 f32", n, wall_ms(run, reps))
    if "smooth" in only:
        n = 64
        x = smooth_input(n)
        out = np.zeros_like(x)
        run = lambda: g.smooth_kernel[(n // 16, n // 16), (16, 16)](x, out)  # noqa: E731
        run()
        assert np.array_equal(out, smooth_reference(x)), "smooth (simulator): wrong result"
        report(peer, "smooth", "64^2 i8", n * n, wall_ms(run, reps))
    if "integrate2d" in only:
        n = 256
        partial = np.zeros(1)
        run = lambda: g.integrate_kernel[1, g.INTEGRATE_TPB](n, partial)  # noqa: E731
        run()
        assert abs(partial.sum()) < 1e-6, "integrate2d (simulator): wrong result"
        report(peer, "integrate2d", "n = 256, shared", n * n, wall_ms(run, reps))
    if "matmul" in only:
        n = 32
        a, b = matmul_inputs(n)
        c = np.zeros_like(a)
        run = lambda: g.matmul_kernel[(n // g.TPB, n // g.TPB), (g.TPB, g.TPB)](a, b, c)  # noqa: E731
        run()
        assert np.array_equal(c, a @ b), "matmul (simulator): wrong result"
        report(peer, "matmul", "32^2 f32, tiled", n * n, wall_ms(run, reps))
    if "quicksort" in only:
        from numba_quicksort import QuickSort

        n = 2048  # one splitting pass, then the bitonic sorts of the small runs
        keys = rng.integers(0, 2**32, size=n, dtype=np.uint32)
        d = np.empty_like(keys)
        sorter = QuickSort(n)

        def run():
            d[:] = keys
            sorter.sort(d)

        run()
        assert np.array_equal(d, np.sort(keys)), "quicksort (simulator): wrong result"
        report(peer, "quicksort", "2048 u32", n, wall_ms(run, reps))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7, help="timed runs after the warm-up")
    p.add_argument("--no-simulator", action="store_true", help="skip Numba's CUDA simulator")
    p.add_argument("--only", choices=PROGRAMS, action="append", help="run only these programs")
    args = p.parse_args()
    if args.reps < 1:
        p.error("--reps must be at least 1")
    only = set(args.only or PROGRAMS)
    print(
        f"# numba {numba.__version__}, {numba.get_num_threads()} threads",
        file=sys.stderr,
    )
    njit_peers(only, args.reps)
    scipy_peers(only, args.reps)
    if not args.no_simulator:
        simulator_peers(only, args.reps)


if __name__ == "__main__":
    main()
