#!/usr/bin/env bash
# s26 call 3 (1 GPU): xent_rows at 264 blocks of 512 threads (two an SM; call 2's 132 of 1024 lost
# to TT_XENT_ROWS=0 by 1.4% on wt103 and 6.4% on ptb at batch 120): its unit on the wt103 plans
# and the ptb configs, then TT_XENT_ROWS=0 against the default in one build, alternating, 2 reps.
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j14) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_TEST_CONFIGS=wt103.yaml TT_TEST_NO_VARIANTS=1 timeout 90 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels (wt103.yaml) rc $? ($(el) s)"; grep -E "xent_rows|FAILED|PASSED" $L/kernels.log | head -12
BASE=build-gpu BASE_ENV=TT_XENT_ROWS=0 REPS=2 SPECS="wt103 ptb-b120 lm1b-body" timeout 230 \
    bench/goals-check.sh $L/ab > $L/ab.txt 2>&1
echo "xent_rows A/B rc $? ($(el) s)"; grep -E "rep|launches" $L/ab.txt | cut -c1-150
grep -E "^softmax|^the step" $L/ab/profile-wt103.txt | cut -c1-120
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
