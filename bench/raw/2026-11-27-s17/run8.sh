#!/usr/bin/env bash
# s17 call 8: s17-ffnscr (FFN weight gradients through the 2104-wide scratch) against main:
# test_gpu_model, test_gpu_repro; goals alternating (lm1b-body wt103 ptb ptb-b120 txl)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|OVER" $L/model.log | head -5; tail -1 $L/model.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
BASE=../old/build-gpu REPS=2 SPECS="lm1b-body wt103 ptb ptb-b120 txl-wt103-base" timeout 380 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
