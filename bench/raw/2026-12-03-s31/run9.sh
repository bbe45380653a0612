#!/usr/bin/env bash
# s31's fifth call (1 GPU) on the branch s31-ln-smem: LayerNorm's backward at D 1024 with its
# sums over rows in shared memory and 528 blocks. The LayerNorm units at D 1024 and lm1b.yaml's,
# test_gpu_model, goals (lm1b's body, wt103: the same bits as main there) against main
# (.snap/main: git archive main ':!bench/raw'), lm1b's body profile both ways.
#   bash bench/raw/2026-12-03-s31/run9.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
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
for f in d1024 lm1b; do
  TT_TEST_CONFIGS=$f timeout 40 build-gpu/tests/test_gpu_kernels > $L/kernels-$f.log 2>&1; echo "test_gpu_kernels ($f) rc $? ($(el) s)"
  grep -E "layernorm|residual_ln|dgamma|dbeta|FAILED|PASSED|NOT CAUGHT" $L/kernels-$f.log | tail -12
done
timeout 45 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -3
BASE=.snap/main/build-gpu REPS=2 SPECS="lm1b-body" timeout $((150 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep" $L/goals.txt | cut -c1-150
BASE=.snap/main/build-gpu REPS=1 SPECS="wt103" timeout $((185 - $(el))) \
    bench/goals-check.sh $L/goals-wt103 > $L/goals-wt103.txt 2>&1
echo "goals wt103 rc $? ($(el) s)"; grep -E "rep|launches" $L/goals-wt103.txt | cut -c1-150
tt_lm1b_body_spec specs/s31-lm1b.yaml 200
for b in .snap/main/build-gpu build-gpu; do
  n=$([ $b = build-gpu ] && echo ours || echo main)
  timeout 20 $b/tt-bench specs/s31-lm1b.yaml --profile > $L/profile-lm1b-$n.txt 2>&1
  echo "lm1b $n: $(grep -E 'as trained' $L/profile-lm1b-$n.txt | cut -c60-80) | $(grep -E '^layernorm' $L/profile-lm1b-$n.txt | cut -c1-60)"
done
rm -f specs/s31-lm1b.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
