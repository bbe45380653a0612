#!/usr/bin/env bash
# s24 call 5 (1 GPU): s24-review (s23-review-gpu: xent's vector length one home; s23-cast-pairs: cast in pairs at bf16, the cast unit's special values; s23-dw-split: a dW whose out is not whole groups of 8 in two products) against main: test_gpu_kernels,
# test_gpu_model; goals alternating (lm1b-body, wt103, ptb-b120, ptb), 2 reps
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
grep -E "FAILED|ERROR" $L/kernels.log | head -5; grep -E "cast|dlogits +xent V=" $L/kernels.log | head -10
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; tail -1 $L/model.log
BASE=../old/build-gpu REPS=2 SPECS="wt103 ptb-b120 lm1b-body" timeout 300 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
