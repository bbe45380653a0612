#!/usr/bin/env bash
# s14 call 3: txl units again (twin rounds dS), txl step per kernel under ncu
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
TT_TEST_CONFIGS=txl timeout 250 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels (txl) rc $?"; grep -E "FAIL|ERROR|NOT CAUGHT|txl_attn" $L/kernels.log | head -40; tail -3 $L/kernels.log
timeout 280 bash bench/profile-step.sh $L/prof txl-wt103 > $L/prof-step.txt 2>&1; echo "profile rc $?"; head -30 $L/prof/step-breakdown.txt
gzip -f $L/kernels.log $L/prof/ncu-step.csv
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
