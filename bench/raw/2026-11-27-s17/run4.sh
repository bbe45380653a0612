#!/usr/bin/env bash
# s17 call 4: main (the ReLU margin counts a bf16 step; txl memories shared): test_gpu_model at
# the failing seed and a fresh one; then cuBLASLt's candidates timed per product: 32 against the
# default 8 (each with a fresh tuning cache of its own), alternating, on the goal specs
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_TEST_SEED=570268223261680922 timeout 120 build-gpu/tests/test_gpu_model > $L/model-seed.log 2>&1; echo "test_gpu_model seed 570268223261680922 rc $? ($(el) s)"; grep -E "FAILED|txl bf16 D 26, d_head 13 +seed|moved" $L/model-seed.log | head -12; tail -1 $L/model-seed.log
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|seed " $L/model.log | head -3; tail -1 $L/model.log
export TT_GEMM_TUNE=32 TTGEN_CACHE_DIR=/tmp/c32
BASE=build-gpu BASE_ENV="TT_GEMM_TUNE=8 TTGEN_CACHE_DIR=/tmp/c8" REPS=2 SPECS="wt103 lm1b-body ptb ptb-b120 txl-wt103-base" timeout 420 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt
tt_wt103_spec specs/p-wt103.yaml 200
tt_lm1b_body_spec specs/p-lm1b.yaml 200
for w in wt103 lm1b; do for c in 8 32; do
  TT_GEMM_TUNE=$c TTGEN_CACHE_DIR=/tmp/c$c timeout 60 build-gpu/tt-bench specs/p-$w.yaml --profile > $L/prof-$w-c$c.txt 2>&1; echo "profile $w tune $c rc $? ($(el) s)"; grep -E "^ffn|^softmax|^qkv|^attention|as trained" $L/prof-$w-c$c.txt | cut -c1-110
done; done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
