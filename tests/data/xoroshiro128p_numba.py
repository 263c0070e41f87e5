"""Records what Numba's own xoroshiro128p generator (numba.cuda.random) gives, for the tests of
kernel_runtime::random to compare with: `python xoroshiro128p_numba.py > xoroshiro128p_numba.json`
in a virtual environment with `numba` installed. Numba's generator functions are CPU `@jit`
functions too, so this needs no GPU.

For each case: the seed, the subsequence start, the states it creates, and for some states a
run of each kind of draw made from a fresh copy of that state. Integers are written as decimal
strings (JSON numbers cannot hold every u64), floats as their IEEE bits in hex.
"""

import json
import sys

import numba
import numpy as np
from numba.cuda import random as r

CASES = [(0, 0, 4), (1, 0, 3), (12345, 0, 5), (2**64 - 1, 0, 2), (42, 3, 3)]
DRAWS = 8


def bits32(x):
    return "%08x" % np.float32(x).view(np.uint32)


def bits64(x):
    return "%016x" % np.float64(x).view(np.uint64)


def draws(states, index, draw, fmt):
    copy = states.copy()
    return [fmt(draw(copy, index)) for _ in range(DRAWS)]


def case(seed, start, n):
    states = np.empty(n, dtype=r.xoroshiro128p_dtype)
    r.init_xoroshiro128p_states_cpu(states, np.uint64(seed), np.uint64(start))
    out = {
        "seed": str(seed),
        "subsequence_start": start,
        "states": [[str(s["s0"]), str(s["s1"])] for s in states],
        "draws": [],
    }
    for index in sorted({0, n - 1}):
        out["draws"].append(
            {
                "index": index,
                "next": draws(states, index, r.xoroshiro128p_next, lambda v: str(int(v))),
                "uniform_f32": draws(states, index, r.xoroshiro128p_uniform_float32, bits32),
                "uniform_f64": draws(states, index, r.xoroshiro128p_uniform_float64, bits64),
                "normal_f32": draws(states, index, r.xoroshiro128p_normal_float32, bits32),
                "normal_f64": draws(states, index, r.xoroshiro128p_normal_float64, bits64),
            }
        )
    return out


json.dump(
    {"numba": numba.__version__, "cases": [case(*c) for c in CASES]},
    sys.stdout,
    indent=1,
)
sys.stdout.write("\n")
