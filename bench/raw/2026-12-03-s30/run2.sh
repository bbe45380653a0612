#!/usr/bin/env bash
# s30 call 2 (1 GPU): the branch s29-cluster-cols (call 1 passed its tests) on the second third of
# the shape grid against the compiled peer (GRID_SET=2), which had not run at this code or main's.
#   bash bench/raw/2026-12-03-s30/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
GRID_SET=2 GRID_BUDGET_S=$((560 - $(el))) timeout $((575 - $(el))) bench/grid-bench.sh $L/grid > $L/grid.txt 2>&1
echo "grid rc $? ($(el) s)"; tail -16 $L/grid.txt
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
