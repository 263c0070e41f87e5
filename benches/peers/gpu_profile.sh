#!/usr/bin/env bash
# Hardware counters of the GPU benchmark's kernels (`./run.sh profile [NAME...]`), read by
# Nsight Compute from the first launch of each kernel named while device_bench runs once:
# throughput against the memory's and the SMs' peaks, occupancy, where warps stall, and the
# instructions issued, and the source lines where the warps stall most (the bundle's kernels
# carry their lines, `KERNEL_LINEINFO=1`). Writes results/profile-DATE.txt.
#
#   ./run.sh profile                       the stencils, the words kernel, the tensor-core matmuls
#   ./run.sh profile matmul_tensor add     the kernels named
#
# The clocks are left as they are (--clock-control none), so the counters match the bench's.
set -u
cd "$(dirname "$0")/.."
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ]; then
    echo "ncu not found: Nsight Compute reads the counters"
    exit 1
fi
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
    kernels=(smooth_stencil smooth_words laplace3d matmul_tensor matmul_tensor_64x64 matmul_tensor_staged matmul_wgmma matmul_wgmma_wide matmul_wgmma_tf32 matmul_tensor_tf32 matmul_tensor_tf32_staged)
fi
mkdir -p results
out="results/profile-$(date -u +%F).txt"
: >"$out"
for k in "${kernels[@]}"; do
    echo "==> $k" | tee -a "$out"
    "$ncu" --clock-control none -k "regex:^$k\$" -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
        --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section InstructionStats --section SourceCounters \
        bin/example-device_bench --reps 1 2>&1 | grep -v '^{' | tee -a "$out"
done
echo "counters in $(pwd)/$out"
