#!/usr/bin/env bash
# s32 call 1 (1 GPU), main at its commit: the grid's four tightest points against the compiled
# peer (not rerun since s31 landed the residual LayerNorm that adds the attention's parts, which
# plans a different kernel at every grid point), then each kernel of one steady step under
# Nsight Compute (bench/profile-step.sh) for wt103 and ptb at batch 32, and tt-bench --profile of both.
#   bash bench/raw/2026-12-06-s32/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
git log -1 --format='commit %H' | tee -a $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16 --target ttgen tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
GRID_BUDGET_S=$((330 - $(el))) timeout $((345 - $(el))) bench/grid-bench.sh $L/grid \
    d1024-n160-r40-c2 d1024-n80-r40-c2-key d1024-n80-r128-c2 d512-n160-r40-c2 > $L/grid.txt 2>&1
echo "grid rc $? ($(el) s)"; tail -8 $L/grid.txt
timeout $((470 - $(el))) bench/profile-step.sh $L/step-wt103 wt103 > /dev/null 2>&1
echo "ncu wt103 rc $? ($(el) s)"; head -14 $L/step-wt103/step-breakdown.txt 2>/dev/null
timeout $((540 - $(el))) bench/profile-step.sh $L/step-ptb ptb > /dev/null 2>&1
echo "ncu ptb rc $? ($(el) s)"; head -14 $L/step-ptb/step-breakdown.txt 2>/dev/null
echo "total $(el) s"
gzip -f $L/*.log $L/*/*.csv 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
