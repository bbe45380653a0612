#!/usr/bin/env bash
# s31's fourth call (1 GPU) on the branch s31-ln-vec: LayerNorm's values in runs of 16 bytes a
# thread. test_gpu_kernels (every config: the LayerNorm units, their plants), test_gpu_model, the
# goals against main (.snap/main: git archive main ':!bench/raw', main ead35fb), profiles of both.
#   bash bench/raw/2026-12-03-s31/run8.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
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
grep -E "layernorm|residual_ln|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | grep -E "wt103|lm1b|txl-wt103-base|FAILED|PASSED|NOT" | tail -14
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -3
BASE=.snap/main/build-gpu REPS=2 SPECS="wt103 lm1b-body ptb-b120" timeout $((480 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
for sp in wt103 lm1b-body; do
  [ $sp = wt103 ] && tt_wt103_spec specs/s31-$sp.yaml 600 || tt_lm1b_body_spec specs/s31-$sp.yaml 200
  for b in .snap/main/build-gpu build-gpu; do
    n=$([ $b = build-gpu ] && echo ours || echo main)
    timeout 30 $b/tt-bench specs/s31-$sp.yaml --profile > $L/profile-$sp-$n.txt 2>&1
    echo "$sp $n: $(grep -E 'as trained' $L/profile-$sp-$n.txt | cut -c60-80) | $(grep -E '^layernorm' $L/profile-$sp-$n.txt | cut -c1-60)"
  done
  rm -f specs/s31-$sp.yaml
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
