#!/usr/bin/env bash
# The GPU benchmark of a bundle (`./run.sh bench`): our device_bench beside the Numba, CuPy and
# CUDA C++ peers, in one run, on this machine's GPU. Writes results/gpu-DATE.jsonl (every
# measurement), results/gpu-DATE.md (the report with the goals) and results/gpu-DATE.png.
#
#   ./run.sh bench            BENCH_REPS=N sets the timed runs (default 20)
#
# A peer whose tools are missing (python3 with numba or cupy, nvcc) says so and is left out.
set -u
cd "$(dirname "$0")/.."
here=$(pwd)
date=$(date -u +%F)
mkdir -p results log
lines="results/gpu-$date.jsonl"
reps=${BENCH_REPS:-20}
echo "{\"info\": \"reps\", \"reps\": $reps}" >"$lines"

gpu="no GPU reported"
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
fi
machine="$date, $gpu"
echo "==> GPU benchmark on: $machine"

run() {  # run NAME COMMAND...: shows the output, keeps it in log/, adds its JSON lines
    local name=$1
    shift
    echo "==> $name"
    "$@" 2>&1 | tee "log/bench-$name.log"
    grep '^{' "log/bench-$name.log" >>"$lines" || true
}

run ours bin/example-device_bench --reps "$reps"
if command -v python3 >/dev/null 2>&1; then
    run numba python3 peers/gpu_numba.py --reps "$reps"
    run cupy python3 peers/gpu_cupy.py --reps "$reps"
else
    echo "python3 not found: the Numba and CuPy peers are left out"
fi
if command -v nvcc >/dev/null 2>&1; then
    if nvcc -O3 -arch=native -o results/peers_cuda peers/cuda/peers.cu 2>log/nvcc.log ||
        nvcc -O3 -arch=sm_90 -o results/peers_cuda peers/cuda/peers.cu 2>>log/nvcc.log; then
        run cuda results/peers_cuda "$reps"
    else
        echo "nvcc failed (log/nvcc.log): the CUDA C++ peers are left out"
    fi
else
    echo "nvcc not found: the CUDA C++ peers are left out"
fi

if command -v python3 >/dev/null 2>&1; then
    python3 peers/gpu_report.py "$lines" "results/gpu-$date.md" "$machine" "results/gpu-$date.png"
    echo
    cat "results/gpu-$date.md"
fi
echo "results in $here/results/"
