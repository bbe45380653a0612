#!/usr/bin/env bash
# s33 call 1 (1 GPU), branch s32-xent-cluster: xent_long as a thread block cluster a row.
# test_xent alone first (its tail plan: rows 180,000 / 250,001 / 30,003 / 160,000 through a
# cluster), then wt103 and txl-wt103-base alternating with TT_XENT_CL=0 (the old one block a
# row) in one build, tt-bench --profile of wt103 both ways, then every GPU unit (test_gpu_kernels,
# test_gpu_model) so the branch is verified whole before it lands.
#   bash bench/raw/2026-12-06-s33/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
git log -1 --format='commit %H' | tee -a $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_TEST_FILTER=test_xent timeout 100 build-gpu/tests/test_gpu_kernels > $L/xent.log 2>&1; echo "test_xent rc $? ($(el) s)"
grep -E "xent|FAILED|PASSED" $L/xent.log | tail -24
BASE=build-gpu BASE_ENV=TT_XENT_CL=0 REPS=2 SPECS="wt103 txl-wt103-base" timeout 300 \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_XENT_CL=0 rc $? ($(el) s)"; grep -E "rep|launches|tok" $L/goals.txt | cut -c1-160
tt_wt103_spec specs/s33-wt103.yaml 600
for e in 0 1; do
    TT_XENT_CL=$e timeout 30 build-gpu/tt-bench specs/s33-wt103.yaml --profile > $L/profile-cl$e.txt 2>&1
    echo "== TT_XENT_CL=$e"; grep -E "^softmax|as trained|^launches|xent" $L/profile-cl$e.txt | cut -c1-130
done
rm -f specs/s33-wt103.yaml
timeout 150 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|PASSED|SKIP" $L/kernels.log | tail -8
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED|SKIP" $L/model.log | tail -8
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
