#!/usr/bin/env bash
# s30 call 1 (1 GPU), on the branch s29-cluster-cols (main's tree in .snap/main, carried): the
# branch's units against their CPU twins (all configs), test_gpu_model, then the goals
# alternating with main's build, and both builds' wt103 step profiles.
#   bash bench/raw/2026-12-03-s30/run1.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S .snap/main -B .snap/main/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build .snap/main/build-gpu -j16 --target tt-train tt-bench) > $L/build-main.log 2>&1 || { tail -30 $L/build-main.log; exit 1; }
echo "built $(el) s"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "cluster_cols|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | grep -vE "^  cluster_cols.*(ptb|odd|causal|txl)" | tail -10
timeout 80 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -3
BASE=.snap/main/build-gpu REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((560 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
grep -E "^softmax|^optimizer|as trained" $L/goals/profile-wt103.txt | cut -c1-120
. bench/gpu-env.sh; tt_wt103_spec specs/s30-wt103.yaml 600
timeout 40 .snap/main/build-gpu/tt-bench specs/s30-wt103.yaml --profile > $L/profile-main.txt 2>&1
grep -E "^softmax|^optimizer|as trained|^launches" $L/profile-main.txt | cut -c1-120
rm -f specs/s30-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
