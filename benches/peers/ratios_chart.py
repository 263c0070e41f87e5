#!/usr/bin/env python3
"""Draws the ratios of a benchmark report as a PNG bar chart (matplotlib).

    python3 benches/peers/ratios_chart.py RATIOS.json OUT.png "title"

RATIOS.json: [{"program": ..., "vs_rayon": x or null, "vs_numba": y or null}, ...], as
`cargo xtask bench` writes it. Below 1 means our kernel is faster than the peer.
Without matplotlib it says so on one line and exits 0.
"""

import json
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("ratios_chart: skipped: the Python module `matplotlib` is not installed")
    sys.exit(0)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, out, title = sys.argv[1:]
    with open(src) as f:
        rows = json.load(f)
    programs = [r["program"] for r in rows]
    series = [("× rayon", "vs_rayon", "#4878a8"), ("× numba.njit(parallel)", "vs_numba", "#e0a040")]
    width = 0.38
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    for k, (label, key, color) in enumerate(series):
        xs = [i + (k - 0.5) * width for i in range(len(rows))]
        ys = [r[key] if r[key] is not None else 0 for r in rows]
        bars = ax.bar(xs, ys, width, label=label, color=color)
        for bar, r in zip(bars, rows):
            if r[key] is not None:
                ax.annotate(f"{r[key]:.2f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), programs)
    ax.set_ylabel("time of our kernel ÷ time of the peer (log)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"ratios_chart: wrote {out}")


if __name__ == "__main__":
    main()
