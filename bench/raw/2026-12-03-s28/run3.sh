#!/usr/bin/env bash
# s28 call 3 (1 GPU): the review's last look at main: test_gpu_kernels and test_gpu_model at
# HEAD (the out_done events' loop reworded), then the first third of the shape grid against the
# compiled peer (GRID_SET=1) with mla_fwd on three slabs, in what time is left.
#   bash bench/raw/2026-12-03-s28/run3.sh   (repo root, on the GPU machine; carry .deps .data)
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
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|PASSED|tests" $L/kernels.log | tail -4
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -3
GRID_SET=1 GRID_BUDGET_S=$((540 - $(el))) timeout $((560 - $(el))) bench/grid-bench.sh $L/grid > $L/grid.txt 2>&1
echo "grid rc $? ($(el) s)"; tail -16 $L/grid.txt
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
