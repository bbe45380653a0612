#!/usr/bin/env bash
# Detail for tuning, in one call on the GPU machine: (1) every kernel of 4 wt103 training steps in
# launch order with its grid, block and time (bench/profile-step.sh's run, not summed), so that each
# cuBLAS kernel can be told apart by its place in the step; (2) Nsight Compute's full sections for
# one launch of each attention kernel of tt-attn-bench at the wt103 shapes (occupancy, warp stall
# reasons, pipe use, shared-memory bank conflicts).
#   bench/profile-kernels.sh OUTDIR      (builds build-gpu/ first)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/profile-kernels.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
  cmake --build build-gpu -j16 --target tt-train tt-attn-bench; } > "$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log"; exit 1; }
bash bench/profile-step.sh "$out" wt103 > "$out/profile-step.txt" 2>&1
tail -n 30 "$out/profile-step.txt"
ncu --set full -k regex:'^mla_' -c 8 --clock-control none \
    build-gpu/tt-attn-bench specs/wt103.yaml --iters 1 > "$out/ncu-attn.txt" 2> "$out/ncu-attn.err"
grep -E '^  mla_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Shared.*Bank|L1/TEX Hit|Compute \(SM\) Throughput|Memory Throughput' "$out/ncu-attn.txt" | head -150
