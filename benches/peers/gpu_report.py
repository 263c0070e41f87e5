#!/usr/bin/env python3
"""Writes the GPU benchmark report from the JSON lines of one run: ours (`device_bench`), the
Numba, CuPy and CUDA C++ peers, the host's rayon sort.

    python3 benches/peers/gpu_report.py RESULTS.jsonl OUT.md "machine line" [OUT.png]

For each program: our kernel time and end-to-end time, the fraction of the device-to-device copy
bandwidth where the program is memory-bound, the ratio of our kernel time to each peer's, whether
every implementation computed the same check value, and each goal of the project with its
verdict. The chart (matplotlib, when there) shows our time over each peer's.
"""

import json
import sys
from collections import defaultdict

# (program, what, limit): what is a peer impl (our time ≤ limit × theirs), "PEER end to end"
# (our time from host inputs to host results ≤ limit × theirs), "bandwidth" (≥ limit of the copy
# bandwidth), "rayon-speedup" (≥ limit × faster than the host's rayon sort) or "ours PROGRAM"
# (our time ≤ limit × our time for PROGRAM).
GOALS = [
    ("add", "bandwidth", 0.90),
    # add-list from and to page-locked host buffers, against CUDA C++ doing the same.
    ("add-pinned", "cuda end to end", 1.1),
    # The same in chunks through three streams, copies overlapping kernels.
    ("add-streams", "cuda end to end", 1.1),
    # The same chunks in one device array per operand, ordered by the bytes each stream uses.
    ("add-streamed", "cuda end to end", 1.1),
    ("add", "cupy", 1.0),
    # add-list four elements per thread: the same goals, against the peers of that algorithm.
    ("add-wide", "bandwidth", 0.90),
    ("add-wide", "cupy", 1.0),
    ("smooth", "bandwidth", 0.85),
    ("smooth", "cuda", 1.05),
    ("smooth", "numba", 1.0),
    # smooth from and to page-locked host buffers, against CUDA C++ doing the same.
    ("smooth-pinned", "cuda end to end", 1.1),
    # The same goals for smooth in strips of rows, against the peers of that algorithm.
    ("smooth-strips", "bandwidth", 0.85),
    ("smooth-strips", "cuda", 1.05),
    ("smooth-strips", "numba", 1.0),
    # And in strips of words of four pixels.
    ("smooth-words", "bandwidth", 0.85),
    ("smooth-words", "cuda", 1.05),
    ("smooth-words", "numba", 1.0),
    # And as a `#[stencil]`, the mapping to threads the macro's: it must beat the words by hand.
    ("smooth-stencil", "bandwidth", 0.85),
    ("smooth-stencil", "ours smooth-words", 0.8),
    ("laplace3d", "bandwidth", 0.80),
    ("integrate2d", "cuda", 1.1),
    ("integrate2d", "numba", 1.0),
    ("quicksort", "cupy", 3.0),
    ("quicksort", "rayon-speedup", 20.0),
    ("matmul", "cuda", 1.0),
    ("matmul", "numba", 1.0),
    # Tensor cores: f16 into f32 against cuBLAS (issue: tensor cores).
    ("matmul-f16", "cupy", 1.5),
    ("matmul-tf32", "cupy", 1.5),
    # The same kernels in blocks of four warps of 64 x 64, side by side with the eight above.
    ("matmul-f16-64x64", "cupy", 1.5),
    ("matmul-tf32-64x64", "cupy", 1.5),
    # And the f16 one of four warps with four tiles staged at once, in dynamic shared memory.
    ("matmul-f16-staged", "cupy", 1.5),
    # And the tf32 one of eight warps with four tiles of 8 staged at once, two blocks an SM.
    ("matmul-tf32-staged", "cupy", 1.5),
    # And the f16 one on Hopper's warpgroup MMA (wgmma, the sm_90a variant of the module).
    ("matmul-f16-wgmma", "cupy", 1.5),
    # And in tiles of 128 x 256, each warpgroup's accumulator m64n256k16.
    ("matmul-f16-wgmma-wide", "cupy", 1.5),
    # And the tf32 one on warpgroup MMA (m64n128k8, b staged transposed).
    ("matmul-tf32-wgmma", "cupy", 1.5),
]
PROGRAMS = ["add", "add-wide", "add-pinned", "add-streams", "add-streamed", "smooth", "smooth-pinned", "smooth-strips", "smooth-words", "smooth-stencil", "laplace3d", "gaussian", "integrate2d", "quicksort", "matmul", "matmul-f16", "matmul-f16-64x64", "matmul-f16-staged", "matmul-f16-wgmma", "matmul-f16-wgmma-wide", "matmul-tf32", "matmul-tf32-64x64", "matmul-tf32-staged", "matmul-tf32-wgmma"]
PEERS = ["numba", "numba @vectorize", "cupy", "cuda", "rayon"]
# Peers whose one form of a program stands for our variants of it too: CuPy's `a + b` and
# Numba's @vectorize are all they have of add-list, however ours spreads it over threads.
# The stencil is set against the peers' fastest smooth, their words of four pixels, and
# against CuPy's ndimage, its one form of smooth.
SAME_AS = {
    ("add-wide", "cupy"): "add",
    ("add-wide", "numba @vectorize"): "add",
    ("add-streamed", "cuda"): "add-streams",
    ("smooth-stencil", "cuda"): "smooth-words",
    ("smooth-stencil", "numba"): "smooth-words",
    ("smooth-stencil", "cupy"): "smooth",
    ("matmul-f16-64x64", "cupy"): "matmul-f16",
    ("matmul-f16-staged", "cupy"): "matmul-f16",
    ("matmul-f16-wgmma", "cupy"): "matmul-f16",
    ("matmul-f16-wgmma-wide", "cupy"): "matmul-f16",
    ("matmul-tf32-64x64", "cupy"): "matmul-tf32",
    ("matmul-tf32-staged", "cupy"): "matmul-tf32",
    ("matmul-tf32-wgmma", "cupy"): "matmul-tf32",
}
LAUNCH_GOAL_US = 4.0
# Per kernel of a graph of 100 launches (issue: CUDA graphs).
GRAPH_GOAL_US = 1.5


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def peer(by, prog, impl):
    """The measurement of `impl` that `prog` is compared with (see SAME_AS), or None."""
    return by.get(prog, {}).get(impl) or by.get(SAME_AS.get((prog, impl)), {}).get(impl)


def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v:.0f} ms" if v >= 100 else f"{v:.2f} ms" if v >= 1 else f"{v * 1e3:.0f} µs"


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, out_md, machine = sys.argv[1:4]
    out_png = sys.argv[4] if len(sys.argv) == 5 else None
    rows = load(src)
    info = {r["info"]: r for r in rows if "info" in r}
    by = defaultdict(dict)
    for r in rows:
        if "program" in r and "impl" in r:
            by[r["program"]][r["impl"]] = r
    copy = by.get("copy", {}).get("rust")
    bandwidth = copy["bytes"] / copy["kernel_ms"] / 1e6 if copy else None  # GB/s
    reps = info.get("reps", {}).get("reps", 20)
    lines = [f"# GPU benchmarks — {machine}", ""]
    lines.append(
        "One run of `run.sh bench`: `device_bench` (ours), `gpu_numba.py`, `gpu_cupy.py`, "
        "`cuda/peers.cu` (nvcc -O3), each kernel time the median between CUDA events over "
        f"{reps} runs after a warm-up (at most 10 for matmul and CuPy's sort, 5 for the "
        "quicksorts of ours, Numba and CUDA C++), "
        "end to end the median wall time from host inputs to host results."
    )
    ptx = info.get("ptx")
    if ptx:
        lines += ["", f"Our kernels: PTX ISA {ptx['version']} for `.target {ptx['target']}` from "
                  "rustc's nvptx64 backend, compiled for this GPU by the driver at load."]
    lines.append("")
    if bandwidth:
        lines.append(f"Device-to-device copy bandwidth: **{bandwidth:.0f} GB/s** "
                     f"({copy['size']}, read + write).")
    for program, what, unit, goal in [
        ("launch", "Launch overhead of an empty 3-array kernel", "per launch", LAUNCH_GOAL_US),
        ("graph", "The same kernel in a graph of 100 launches (`Device::capture`, replayed)",
         "per kernel", GRAPH_GOAL_US),
    ]:
        row = by.get(program, {}).get("rust")
        if row:
            us = row["kernel_ms"] * 1e3
            verdict = "met" if us <= goal else "not met"
            lines.append(f"{what}: **{us:.2f} µs** {unit} (goal ≤ {goal} µs: {verdict}).")
    first = by.get("first-launch", {}).get("rust")
    if first:
        lines.append(f"First launch of a `gpu-kernels` kernel, module load included: "
                     f"**{first['kernel_ms']:.1f} ms** ({first['size']}).")
    qpass, qsort = by.get("quicksort-pass", {}).get("rust"), by.get("quicksort", {}).get("rust")
    if qpass and qsort:  # the pass's check is the number of passes the whole sort made
        passes = int(qpass["check"])
        of_bw = (f", {qpass['bytes'] / qpass['kernel_ms'] / 1e6 / bandwidth:.0%} of copy bandwidth"
                 if bandwidth else "")
        lines.append(
            f"Quicksort: one splitting pass over all the keys (pivots, count, scatter) takes "
            f"**{fmt_ms(qpass['kernel_ms'])}**{of_bw}; the sort made {passes} passes, the last "
            f"ones over part of the keys, so at most {fmt_ms(passes * qpass['kernel_ms'])} of its "
            f"{fmt_ms(qsort['kernel_ms'])} is splitting, the rest its small-run sorts and the "
            f"host's turns between passes.")
    lines += ["", "| program | size | ours: kernel | ours: end to end | of copy bandwidth | "
              + " | ".join(f"× {p}" for p in PEERS) + " | same result |",
              "| --- " * (5 + len(PEERS) + 1) + "|"]
    chart = []
    for prog in PROGRAMS:
        impls = by.get(prog, {})
        ours = impls.get("rust")
        if not ours:
            continue
        frac = "—"
        if bandwidth and ours.get("bytes"):
            frac = f"{ours['bytes'] / ours['kernel_ms'] / 1e6 / bandwidth:.0%}"
        ratios = []
        for p in PEERS:
            theirs = peer(by, prog, p)
            if theirs:
                r = ours["kernel_ms"] / theirs["kernel_ms"]
                ratios.append(f"{r:.2f}× ({fmt_ms(theirs['kernel_ms'])})")
                chart.append((prog, p, r))
            else:
                ratios.append("—")
        checks = {name: r["check"] for name, r in impls.items()}
        same = "yes" if len(set(checks.values())) == 1 else "NO: " + ", ".join(
            f"{k} {v}" for k, v in checks.items())
        lines.append(f"| {prog} | {ours['size']} | {fmt_ms(ours['kernel_ms'])} | "
                     f"{fmt_ms(ours.get('e2e_ms'))} | {frac} | " + " | ".join(ratios)
                     + f" | {same} |")
    lines += ["", "## Goals", "", "| program | goal | figure | met |", "| --- | --- | --- | --- |"]
    for prog, what, limit in GOALS:
        impls = by.get(prog, {})
        ours = impls.get("rust")
        figure, met = "not measured", "—"
        if ours and what == "bandwidth" and bandwidth and ours.get("bytes"):
            f = ours["bytes"] / ours["kernel_ms"] / 1e6 / bandwidth
            figure, met = f"{f:.0%} of copy bandwidth", "yes" if f >= limit else "no"
            goal = f"≥ {limit:.0%} of copy bandwidth"
        elif what.endswith(" end to end"):
            goal = f"≤ {limit}× {what}"
            theirs = impls.get(what.removesuffix(" end to end"))
            if ours and theirs and ours.get("e2e_ms") and theirs.get("e2e_ms"):
                r = ours["e2e_ms"] / theirs["e2e_ms"]
                figure, met = f"{r:.2f}×", "yes" if r <= limit else "no"
        elif what.startswith("ours "):
            other = what.removeprefix("ours ")
            goal = f"≤ {limit}× our {other}"
            mine = by.get(other, {}).get("rust")
            if ours and mine:
                r = ours["kernel_ms"] / mine["kernel_ms"]
                figure, met = f"{r:.2f}×", "yes" if r <= limit else "no"
        elif what == "rayon-speedup":
            goal = f"≥ {limit:.0f}× the host's rayon sort"
            if ours and "rayon" in impls:
                s = impls["rayon"]["kernel_ms"] / ours["kernel_ms"]
                figure, met = f"{s:.1f}×", "yes" if s >= limit else "no"
        else:
            goal = f"≤ {limit}× {what}" if what != "bandwidth" else f"≥ {limit:.0%} of copy bandwidth"
            theirs = peer(by, prog, what)
            if ours and theirs:
                r = ours["kernel_ms"] / theirs["kernel_ms"]
                figure, met = f"{r:.2f}×", "yes" if r <= limit else "no"
        lines.append(f"| {prog} | {goal} | {figure} | {met} |")
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"gpu_report: wrote {out_md}")
    if out_png and chart:
        draw(chart, out_png, machine)


def draw(chart, out_png, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("gpu_report: no chart: the Python module `matplotlib` is not installed")
        return
    labels = [f"{prog}\nvs {peer}" for prog, peer, _ in chart]
    values = [r for _, _, r in chart]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(values)), 4.2), dpi=120)
    ax.bar(range(len(values)), values, color="#4878a8")
    for k, v in enumerate(values):
        ax.annotate(f"{v:.2f}", (k, v), ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_ylabel("our kernel time ÷ the peer's (log)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out_png)
    print(f"gpu_report: wrote {out_png}")


if __name__ == "__main__":
    main()
