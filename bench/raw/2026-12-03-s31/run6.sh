#!/usr/bin/env bash
# s31's second call (1 GPU) on the branch s31-combo: main + s30-arena-size (the arena at its
# carved size) + s31-align (Adam's v 256-byte aligned after m) + s30-ln-sum (the attention's
# residual LayerNorm adds mla_fwd's parts). Units (test_gpu_kernels, all configs), test_gpu_model
# (footprint and alignment), goals against main (.snap/main: git archive main ':!bench/raw'), then
# goals against TT_LN_SUMS=0 in the same build, then profiles: main, ours TT_LN_SUMS=0, ours.
#   bash bench/raw/2026-12-03-s31/run6.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
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
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "footprint|FAILED|PASSED" $L/model.log | tail -4
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "mla_residual_ln|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | grep -vE "^  mla_residual_ln.*(odd|txl)" | tail -10
BASE=.snap/main/build-gpu REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((420 - $(el))) \
    bench/goals-check.sh $L/goals-main > $L/goals-main.txt 2>&1
echo "goals vs main rc $? ($(el) s)"; grep -E "rep|launches" $L/goals-main.txt | cut -c1-150
BASE=build-gpu BASE_ENV=TT_LN_SUMS=0 REPS=2 SPECS="wt103 ptb-b120" timeout $((530 - $(el))) \
    bench/goals-check.sh $L/goals-ln > $L/goals-ln.txt 2>&1
echo "goals vs TT_LN_SUMS=0 rc $? ($(el) s)"; grep -E "rep|launches" $L/goals-ln.txt | cut -c1-150
tt_wt103_spec specs/s31-wt103.yaml 600
prof() { # name build [VAR=value]
  local n=$1 b=$2; shift 2
  env "$@" timeout 30 $b/tt-bench specs/s31-wt103.yaml --profile > $L/profile-$n.txt 2>&1
  echo "== $n"; grep -E "^optimizer|^attention|^layernorm|as trained|^launches" $L/profile-$n.txt | cut -c1-120
}
prof main .snap/main/build-gpu
prof ours-ln0 build-gpu TT_LN_SUMS=0
prof ours build-gpu
rm -f specs/s31-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
