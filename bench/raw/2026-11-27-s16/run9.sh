#!/usr/bin/env bash
# s16 call 9: the shape grid's two lowest points (d1024-n160 1.29x, d512-n160 1.96x at 3ce1109)
# at HEAD against the compiled PyTorch peer of the same call
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train ttgen) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(( $(date +%s) - T0 )) s"
GRID_BUDGET_S=400 timeout 480 bench/grid-bench.sh $L/grid d1024-n160-r40-c2 d512-n160-r40-c2 > $L/grid.txt 2>&1; echo "grid rc $?"
cat $L/grid/table.txt 2>/dev/null || tail -20 $L/grid.txt
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/grid/*.log 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
