#!/usr/bin/env python3
"""The smooth stencil with Numba on the CPU: the peer of `cargo bench --bench cpu_backend -- smooth`.

`numba.njit(parallel=True)` around a `@numba.stencil` 3x3 mean (int8 widened to int32, `// 9`)
over a 10000 x 10000 int8 image; prints the median of several runs after the JIT warm-up as one
line, `smooth_numba_ms <value>`. Without numba it says so and exits 0.

    python3 benches/peers/smooth_numba.py [--n 10000] [--reps 7]

`//` floors, as the Rust kernel's `div_euclid(9)` does, so both compute the same image.
"""

import argparse
import statistics
import sys
import time

try:
    import numpy as np
    import numba
except ImportError as e:  # numba (and numpy, its dependency) are optional here
    print(
        f"smooth_numba: skipped: the Python module `{e.name}` is not installed "
        "(pip install numba)"
    )
    sys.exit(0)


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
def smooth(a):
    return mean3x3(a)


def numpy_smooth(a):
    """The same stencil with numpy slices, to check the Numba result."""
    w = a.astype(np.int32)
    s = np.zeros_like(w)
    s[1:-1, 1:-1] = sum(
        w[1 + di : w.shape[0] - 1 + di, 1 + dj : w.shape[1] - 1 + dj]
        for di in (-1, 0, 1)
        for dj in (-1, 0, 1)
    )
    out = (s // 9).astype(np.int8)
    out[0, :] = out[-1, :] = 0
    out[:, 0] = out[:, -1] = 0
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="image side (default 10000)")
    p.add_argument("--reps", type=int, default=7, help="timed runs after the warm-up")
    args = p.parse_args()
    if args.n < 1 or args.reps < 1:
        p.error("--n and --reps must be at least 1")

    x = np.random.default_rng(3).integers(-128, 128, size=(args.n, args.n), dtype=np.int8)
    out = smooth(x)  # JIT compilation and warm-up
    times = []
    for _ in range(args.reps):
        t = time.perf_counter()
        out = smooth(x)
        times.append(time.perf_counter() - t)
    if not np.array_equal(out, numpy_smooth(x)):
        print("smooth_numba: the Numba result differs from numpy's", file=sys.stderr)
        sys.exit(1)
    print(
        f"# numba {numba.__version__}, {numba.get_num_threads()} threads, "
        f"{args.n} x {args.n} int8, median of {args.reps} runs",
        file=sys.stderr,
    )
    print(f"smooth_numba_ms {statistics.median(times) * 1e3:.3f}")


if __name__ == "__main__":
    main()
