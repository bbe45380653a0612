#!/usr/bin/env bash
# s17 call 11: s17-params (mla_mat_params: a block per dg/du/dv output) against main: the mat
# units, test_gpu_model, lm1b-body alternating
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_kernels test_gpu_model tt-train ttgen tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
TT_TEST_CONFIGS=mat timeout 100 build-gpu/tests/test_gpu_kernels > $L/kernels-mat.log 2>&1; echo "test_gpu_kernels (mat) rc $? ($(el) s)"; grep -E "mla_mat_bwd|FAIL" $L/kernels-mat.log | head -6; tail -1 $L/kernels-mat.log
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|OVER|materialized.*worst" $L/model.log | head -8; tail -1 $L/model.log
BASE=../old/build-gpu REPS=2 SPECS="lm1b-body" timeout 150 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep" $L/goals.txt | cut -c1-100
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
