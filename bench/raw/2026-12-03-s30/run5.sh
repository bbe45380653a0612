#!/usr/bin/env bash
# s31 (1 GPU), written in s30 and not yet run, on the branch s30-ln-sum: the attention's residual
# LayerNorm adds mla_fwd's parts itself (mla_residual_ln_fwd) instead of mla_fwd_sum writing y
# first. Its unit against the CPU twin (all configs), test_gpu_model, then the goals alternating
# with TT_LN_SUMS=0 (main's path: mla_fwd_sum, then residual_ln_fwd) in the same build, and the
# wt103 profile both ways.
#   bash bench/raw/2026-12-03-s30/run5.sh   (repo root of the branch, on the GPU machine; carry .deps .data)
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
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "mla_residual_ln|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | grep -vE "^  mla_residual_ln.*(odd|txl)" | tail -10
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "footprint|FAILED|PASSED" $L/model.log | tail -4
BASE=build-gpu BASE_ENV=TT_LN_SUMS=0 REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((500 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
tt_wt103_spec specs/s31-wt103.yaml 600
for v in 1 0; do
  TT_LN_SUMS=$v timeout 40 build-gpu/tt-bench specs/s31-wt103.yaml --profile > $L/profile-$v.txt 2>&1
  grep -E "^attention|^layernorm|as trained|^launches" $L/profile-$v.txt | cut -c1-120
done
rm -f specs/s31-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
