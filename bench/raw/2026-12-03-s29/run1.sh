#!/usr/bin/env bash
# s29 call 1 (1 GPU): ffn_mm (the FFN's products with the activation in their epilogues) under
# test_gpu_kernels (its two new units against their CPU twins, planted errors) and
# test_gpu_model; then the goals alternating with TT_FFN_MM=0 (cuBLAS's products and ffn_act's
# pass) in the same build: wt103, ptb at batch 120, ptb, 2 reps.
#   bash bench/raw/2026-12-03-s29/run1.sh   (repo root, on the GPU machine; carry .deps .data)
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
timeout 240 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "ffn_mm|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -40
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | head -10
BASE=build-gpu BASE_ENV=TT_FFN_MM=0 REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((560 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches|ppl|perplex" $L/goals.txt | cut -c1-170
head -16 $L/goals/profile-wt103.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
