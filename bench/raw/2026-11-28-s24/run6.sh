#!/usr/bin/env bash
# s24 call 6 (1 GPU): main's tightest grid points against the compiled PyTorch peer in the same
# call (the three lowest ratios of the last full grid, 3ce1109: d1024-n160 1.29x, d512-n160
# 1.96x, d1024-n80 2.13x): GRID_BUDGET_S=330 bench/grid-bench.sh OUT POINTS
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "commit $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train ttgen) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_COMMIT=$(cat ../commit.txt) GRID_BUDGET_S=330 timeout 360 bench/grid-bench.sh $L/grid d1024-n160-r40-c2 d512-n160-r40-c2 d1024-n80-r40-c2 > $L/grid.txt 2>&1; echo "grid rc $? ($(el) s)"
tail -12 $L/grid.txt; cat $L/grid/table.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
