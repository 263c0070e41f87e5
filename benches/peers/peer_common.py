"""What the peers share: timing, and the inputs and check values every implementation of the
reference programs builds the same way (see examples/device_bench.rs)."""

import json
import statistics
import time

import numpy as np


def wall_ms(f, reps):
    """The median wall time of `f` in milliseconds over `reps` runs after one warm-up."""
    f()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def emit(impl, program, size, kernel_ms, e2e_ms, bytes_, check):
    """One GPU measurement as a JSON line, as `device_bench` and the report read them."""
    line = {"impl": impl, "program": program, "size": size, "kernel_ms": kernel_ms,
            "e2e_ms": e2e_ms, "bytes": bytes_, "check": check}
    print(json.dumps(line), flush=True)


def smooth_input(n):
    i, j = np.indices((n, n))
    return ((i * 31 + j * 17) % 251 - 125).astype(np.int8)


def smooth_reference(x):
    """The 3x3 mean (sum widened, floor-divided by 9), border left zero, with numpy slices."""
    w = x.astype(np.int32)
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


def smooth_check(out):
    i, j = np.indices(out.shape)
    return str(int(np.sum(out.astype(np.int64) * ((i + 2 * j) % 7 + 1))))


def matmul_inputs(n):
    """Multiples of 1/8 and 1/16: every partial sum is exact in float32."""
    i, j = np.indices((n, n))
    a = (((i * 7 + j * 3) % 13) * 0.125 - 0.75).astype(np.float32)
    b = (((i * 5 + j * 11) % 17) * 0.0625 - 0.5).astype(np.float32)
    return a, b


def matmul_f16_inputs(n):
    """0, 1 and -1 in a pattern, as float16: every sum of products is a small integer, exact in
    float16 and float32 alike."""
    i, j = np.indices((n, n))
    a = ((i * 7 + j * 3) % 13 == 0).astype(np.float16)
    r = (i * 5 + j * 11) % 17
    b = np.where(r == 0, 1.0, np.where(r == 1, -1.0, 0.0)).astype(np.float16)
    return a, b


def sum_check(out, decimals):
    return f"{float(np.sum(out, dtype=np.float64)):.{decimals}f}"


def integrate_check(value):
    s = f"{value + 0.0:.9f}"
    return "0.000000000" if s == "-0.000000000" else s


def sort_keys(n):
    return (((np.arange(n, dtype=np.uint64) * 2654435761) % (1 << 32)) >> 8).astype(np.uint32)


def sort_check(sorted_keys):
    s = sorted_keys.astype(np.uint64)
    weights = np.arange(s.size, dtype=np.uint64) % 7 + 1
    return str(int(np.sum(s * weights, dtype=np.uint64)))
