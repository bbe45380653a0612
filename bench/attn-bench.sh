#!/usr/bin/env bash
# The attention alone, in one call on the GPU machine: our fused forward and backward
# (tt-attn-bench) against the same computation with a materialized T and cuBLAS in PyTorch
# (bench/torch_attn.py, eager and torch.compile), on the same card, after the peer has checked its
# results against ours. The issue's goal: ours at least 3x faster, forward+backward, at wt103's
# shapes. Carry the .debs of ../shared/scripts/fetch-debs.sh .deps (see bench/gpu-env.sh).
#   bench/attn-bench.sh OUTDIR [SPEC]   (default specs/wt103.yaml; its data is not needed)
# OUTDIR gets gpu.txt, build.log, attn.safetensors (the dump) and attn-bench.txt (everything
# printed); the table comes last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/attn-bench.sh OUTDIR [SPEC]} spec=${2:-specs/wt103.yaml} iters=${ITERS:-50}
mkdir -p "$out"
. bench/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
if ! { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
       cmake --build build-gpu -j16 --target tt-attn-bench; } > "$out/build.log" 2>&1; then
    tail -n 40 "$out/build.log"
    echo "attn-bench: the build failed (see $out/build.log)"
    exit 1
fi
{
    build-gpu/tt-attn-bench "$spec" --iters "$iters" --dump "$out/attn.safetensors" &&
        echo &&
        python3 bench/torch_attn.py --load "$out/attn.safetensors" --iters "$iters"
} 2>&1 | tee "$out/attn-bench.txt"
exit "${PIPESTATUS[0]}"
