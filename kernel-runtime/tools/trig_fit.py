#!/usr/bin/env python3
"""The coefficients of the device sine and cosine (`src/math/trig.rs`).

A Remez exchange, in 60 digits, for polynomials in z = r^2 on |r| <= pi/4 (a hair wider, for
the reduction's rounding) that minimise the relative error of sin and cos themselves:

    sin r = r + r * z * q(z)    q of degree 5 (f64) or 2 (f32)
    cos r = 1 + z * p(z)        p of degree 6 (f64) or 3 (f32)

Prints each table's row highest power first, as `trig.rs` holds them, with the levelled error.

    python3 kernel-runtime/tools/trig_fit.py     (needs mpmath)
"""

import struct

import mpmath as mp

mp.mp.dps = 60
Z = (mp.pi / 4 * mp.mpf("1.0001")) ** 2


def sin_q(z):
    r = mp.sqrt(z)
    return (mp.sin(r) - r) / r**3 if z > 0 else mp.mpf(-1) / 6


def sin_weight(z):  # relative error of sin r per unit error of q
    r = mp.sqrt(z)
    return z * r / mp.sin(r) if z > 0 else mp.mpf(0)


def cos_p(z):
    return (mp.cos(mp.sqrt(z)) - 1) / z if z > 0 else mp.mpf(-1) / 2


def cos_weight(z):  # relative error of cos r per unit error of p
    return z / mp.cos(mp.sqrt(z))


def remez(f, w, deg, a=mp.mpf(0), b=Z, iters=30, grid=4000):
    """The degree-`deg` polynomial minimising max |w (f - poly)| on [a, b], and that maximum."""
    n = deg + 2
    xs = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (n - 1)) for i in range(n)]
    xs[0] = a + (b - a) * mp.mpf("1e-6")  # the weight vanishes at 0
    for _ in range(iters):
        m, y = mp.matrix(n, n), mp.matrix(n, 1)
        for i, x in enumerate(xs):
            for j in range(deg + 1):
                m[i, j] = x**j
            m[i, deg + 1] = (-1) ** i / w(x)
            y[i] = f(x)
        sol = mp.lu_solve(m, y)
        c = [sol[j] for j in range(deg + 1)]

        def err(x):
            return w(x) * (f(x) - sum(c[j] * x**j for j in range(deg + 1)))

        # The new reference: the largest error of each run of one sign.
        runs = []
        for k in range(1, grid + 1):
            x = a + (b - a) * k / grid
            v = err(x)
            if not runs or (v >= 0) != runs[-1][0]:
                runs.append([v >= 0, x, abs(v)])
            elif abs(v) > runs[-1][2]:
                runs[-1][1:] = [x, abs(v)]
        if len(runs) >= n:
            start = max(range(len(runs) - n + 1), key=lambda s: min(r[2] for r in runs[s:s + n]))
            xs = [r[1] for r in runs[start:start + n]]
    return c, max(r[2] for r in runs)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


for kind, round_to, sin_deg, cos_deg in [("f64", float, 5, 6), ("f32", f32, 2, 3)]:
    for name, f, w, deg, tail in [
        ("sin", sin_q, sin_weight, sin_deg, [0.0]),  # the row ends in q's product with z
        ("cos", cos_p, cos_weight, cos_deg, []),
    ]:
        c, e = remez(f, w, deg)
        row = [round_to(v) for v in reversed(c)] + tail
        print(f"{kind} {name}: relative error {mp.nstr(e, 3)}")
        print("    [" + ", ".join(repr(v) for v in row) + "]")
