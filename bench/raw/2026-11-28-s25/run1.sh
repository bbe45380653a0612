#!/usr/bin/env bash
# s25 call 1 (1 GPU): s24-both (copy_rows: refresh_padded in one launch; lastsum: mla_fwd_sum and
# mla_bwd_wo_sum folded into their kernels by a last-arriving part) against main 614a686:
# test_gpu_kernels, memcheck on the odd configs, test_gpu_model, goals alternating, 2 reps
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build ../old/build-gpu -j8 --target tt-train) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j12) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
[ -x ../old/build-gpu/tt-train ] || { tail -30 $L/build-old.log; exit 1; }
echo "built $(el) s"
(cd build-gpu && timeout 200 ctest -R test_gpu_kernels --output-on-failure) > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|ERROR" $L/kernels.log | head -5; grep -E "copy_rows|mla_fwd|mla_bwd_wo" $L/kernels.log | head -12
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; tail -1 $L/model.log
TT_TEST_CONFIGS=odd TT_TEST_NO_VARIANTS=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels > $L/memcheck.log 2>&1; echo "memcheck rc $? ($(el) s)"; tail -3 $L/memcheck.log
BASE=../old/build-gpu REPS=2 SPECS="wt103 ptb-b120 lm1b-body txl-wt103-base" timeout 280 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
