#!/usr/bin/env bash
# s17 call 6: s17-e (E in the storage type; txl kinks 1e-2 at bf16) against main: the mat units,
# test_gpu_model at the failing seed and a fresh one, test_gpu_repro; lm1b-body alternating
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
TT_TEST_CONFIGS=mat timeout 120 build-gpu/tests/test_gpu_kernels > $L/kernels-mat.log 2>&1; echo "test_gpu_kernels (mat configs) rc $? ($(el) s)"; grep -E "mla_mat_bwd|FAIL|PASSED" $L/kernels-mat.log | head -12
TT_TEST_SEED=570268223261680922 timeout 120 build-gpu/tests/test_gpu_model > $L/model-seed.log 2>&1; echo "test_gpu_model seed 570268223261680922 rc $? ($(el) s)"; grep -E "OVER|farthest|txl bf16 D 26, d_head 13 +seed|materialized.*worst" $L/model-seed.log | head -12; tail -1 $L/model-seed.log
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|seed |materialized.*worst|txl.*worst" $L/model.log | head -16; tail -1 $L/model.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
BASE=../old/build-gpu REPS=2 SPECS="lm1b-body" timeout 200 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep" $L/goals.txt
tt_lm1b_body_spec specs/p-lm1b.yaml 200
timeout 60 build-gpu/tt-bench specs/p-lm1b.yaml --profile > $L/bench-prof-lm1b.txt 2>&1; echo "tt-bench --profile lm1b rc $? ($(el) s)"; grep -E "^attention|as trained" $L/bench-prof-lm1b.txt | cut -c1-120
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
