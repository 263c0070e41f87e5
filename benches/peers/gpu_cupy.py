#!/usr/bin/env python3
"""CuPy where it has the operation: add-list (`a + b`), quicksort (`cupy.sort`), matmul (`a @ b`,
cuBLAS, not the tiled algorithm; in f16, and in f32 as tf32 on tensor cores), smooth (`cupyx.scipy.ndimage.correlate` with the 3x3 ones,
then the floor division by 9 and the border cleared, as a CuPy user writes the program: three
passes where the kernels make one). Peers of `examples/device_bench.rs`, on the same inputs,
with the same check values and JSON lines (see gpu_numba.py).

    python3 benches/peers/gpu_cupy.py [--reps 20]
"""

import argparse
import contextlib
import statistics
import sys

try:
    import numpy as np
    import cupy as cp
except ImportError as e:
    print(f"gpu_cupy: skipped: the Python module `{e.name}` is not installed")
    sys.exit(0)

from peer_common import (emit, matmul_f16_inputs, matmul_inputs, smooth_check, smooth_input, sort_check, sort_keys,
                         sum_check, wall_ms)


def kernel_ms(f, reps, setup=None):
    """The median time of `f` between CUDA events; `setup` runs before each, outside them."""
    if setup:
        setup()
    f()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        if setup:
            setup()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    reps = p.parse_args().reps
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver or no GPU
        print(f"gpu_cupy: skipped: no CUDA GPU is usable from CuPy ({e})")
        return
    out = {}

    n = 100_000_000
    ones = np.ones(n, dtype=np.float32)
    da, db = cp.asarray(ones), cp.asarray(ones)
    dc = cp.empty_like(da)
    k = kernel_ms(lambda: cp.add(da, db, out=dc), reps)
    e = wall_ms(lambda: out.update(c=cp.asnumpy(cp.asarray(ones) + cp.asarray(ones))), min(reps, 5))
    emit("cupy", "add", f"{n} f32", k, e, 12.0 * n, sum_check(out['c'], 1))

    n = 1 << 26
    keys = sort_keys(n)
    dk = cp.asarray(keys)
    holder = {}
    k = kernel_ms(lambda: holder.update(s=cp.sort(holder["k"])), min(reps, 10),
                  setup=lambda: holder.update(k=dk.copy()))
    e = wall_ms(lambda: out.update(s=cp.asnumpy(cp.sort(cp.asarray(keys)))), 3)
    emit("cupy", "quicksort", f"{n} u32", k, e, None, sort_check(out["s"]))

    n = 4096
    a, b = matmul_inputs(n)
    da, db = cp.asarray(a), cp.asarray(b)
    k = kernel_ms(lambda: da @ db, min(reps, 10))
    e = wall_ms(lambda: out.update(m=cp.asnumpy(cp.asarray(a) @ cp.asarray(b))), 3)
    emit("cupy", "matmul", f"{n}x{n} f32, cuBLAS", k, e, None, sum_check(out["m"], 4))

    n = 8192
    a, b = matmul_f16_inputs(n)
    da, db = cp.asarray(a), cp.asarray(b)
    k = kernel_ms(lambda: out.update(h=da @ db), min(reps, 10))
    emit("cupy", "matmul-f16", f"{n}x{n} f16, cuBLAS", k, None, None,
         sum_check(cp.asnumpy(out["h"]).astype(np.float64), 1))

    a, b = matmul_inputs(n)
    da, db = cp.asarray(a), cp.asarray(b)
    with tf32_matmuls():
        k = kernel_ms(lambda: out.update(t=da @ db), min(reps, 10))
    emit("cupy", "matmul-tf32", f"{n}x{n} f32 as tf32, cuBLAS", k, None, None, sum_check(cp.asnumpy(out["t"]), 4))

    n = 10_000
    x = smooth_input(n)
    dx = cp.asarray(x)
    k = kernel_ms(lambda: smooth_ndimage(dx), reps)
    e = wall_ms(lambda: out.update(s=cp.asnumpy(smooth_ndimage(cp.asarray(x)))), min(reps, 5))
    emit("cupy", "smooth", f"{n}x{n} i8, ndimage", k, e, 2.0 * n * n, smooth_check(out["s"]))


@contextlib.contextmanager
def tf32_matmuls():
    """float32 matmuls on tensor cores, the inputs rounded to tf32 (cuBLAS's
    CUBLAS_COMPUTE_32F_FAST_TF32, as CUPY_TF32=1 asks for), then back to CuPy's default."""
    from cupy._core import _routines_linalg as linalg

    before = linalg.get_compute_type(np.float32)
    # COMPUTE_TYPE_TF32, as CuPy's _routines_linalg numbers it.
    linalg.set_compute_type(np.float32, getattr(linalg, "COMPUTE_TYPE_TF32", 7))
    try:
        yield
    finally:
        linalg.set_compute_type(np.float32, before)


def smooth_ndimage(dx):
    """smooth with CuPy's ndimage: the 3x3 sums, floor-divided by 9, the border left zero."""
    from cupyx.scipy import ndimage

    ones = cp.ones((3, 3), dtype=cp.int32)
    s = ndimage.correlate(dx, ones, output=cp.int32, mode="constant")
    out = (s // 9).astype(cp.int8)
    out[0, :] = 0
    out[-1, :] = 0
    out[:, 0] = 0
    out[:, -1] = 0
    return out


if __name__ == "__main__":
    main()
