#!/usr/bin/env bash
# s27 call 2 (1 GPU): the output layer's weight and bias gradients beside its chain to dx on the
# side stream (TT_OUTPUT_SIDE, two sets of logits buffers) and a weight gradient's out split into
# whole eights and the rest (TT_GEMM_SPLIT_OUT): test_gpu_model (its graph test runs
# TT_OUTPUT_SIDE=0 against the default for the same bits), then each against its switch off in
# one build, alternating.
#   bash bench/raw/2026-12-03-s27/run2.sh   (repo root, on the GPU machine; carry .deps .data)
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
timeout 200 build-gpu/tests/test_gpu_model > $L/model.log 2>&1
echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|PASSED|output on one" $L/model.log | head -24; tail -1 $L/model.log
BASE=build-gpu BASE_ENV=TT_OUTPUT_SIDE=0 REPS=2 SPECS="wt103 ptb-b120" timeout 200 \
    bench/goals-check.sh $L/side > $L/side.txt 2>&1
echo "output side A/B rc $? ($(el) s)"; grep -E "rep|launches" $L/side.txt | cut -c1-170
if [ "$(el)" -lt 470 ]; then
    BASE=build-gpu BASE_ENV=TT_GEMM_SPLIT_OUT=0 REPS=1 SPECS="wt103" timeout $((560 - $(el))) \
        bench/goals-check.sh $L/split > $L/split.txt 2>&1
    echo "split out A/B rc $? ($(el) s)"; grep -E "rep|launches" $L/split.txt | cut -c1-170
fi
head -14 $L/side/profile-wt103.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
