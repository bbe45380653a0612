#!/usr/bin/env bash
# s26 call 2 (1 GPU): HEAD: b3cd824 with copy_rows' table built after the padded weights know their masters (call 1: an illegal address in every model with a padded weight) (copy_rows: the padded weights' refresh in one launch; xent_rows:
# the head's cross-entropy with the bias's gradient) against main a7ac857 (614a686's code), built
# in the same call: test_gpu_kernels, test_gpu_model, the goals alternating (2 reps), then
# TT_XENT_ROWS=0 against the default in one build (wt103, ptb-b120) while time is left.
#   bash bench/raw/2026-12-02-s26/run1.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "old $(cat .snap/old.txt)"
(cmake -S .snap/old -B .snap/old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null &&
 cmake --build .snap/old/build-gpu -j6 --target tt-train) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j10) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
[ -x .snap/old/build-gpu/tt-train ] || { tail -30 $L/build-old.log; exit 1; }
echo "built $(el) s"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|ERROR|NOT CAUGHT" $L/kernels.log | head -8
grep -E "xent_rows|copy_rows|PASSED|FAILED" $L/kernels.log | head -40
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1
echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|rows," $L/model.log | head -12; tail -1 $L/model.log
BASE=.snap/old/build-gpu REPS=2 SPECS="wt103 ptb-b120 txl-wt103-base lm1b-body" timeout 270 \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
if [ "$(el)" -lt 470 ]; then
    BASE=build-gpu BASE_ENV=TT_XENT_ROWS=0 REPS=1 SPECS="wt103 ptb-b120" timeout $((560 - $(el))) \
        bench/goals-check.sh $L/ab > $L/ab.txt 2>&1
    echo "xent_rows A/B rc $? ($(el) s)"; grep -E "rep|launches" $L/ab.txt | cut -c1-150
fi
head -14 $L/goals/profile-wt103.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
