#!/usr/bin/env bash
# s33 call 2 (1 GPU), branch s33-ffn-wg: the FFN's first product and its activation as one wgmma
# kernel (templates/ffn_wg.cu, ffn_in_fwd), and its backward with the product dyf W2 (ffn_in_bwd). Every GPU unit (test_gpu_kernels: the new unit on
# each bf16 sm_90 config with d_model a multiple of 64 up to 256, and its plants), test_gpu_model,
# then wt103, ptb at batch 120 and ptb alternating with TT_FFN_IN=0 (cuBLAS's product and
# ffn_act_fwd, as main) in one build, and tt-bench --profile of wt103 both ways.
#   bash bench/raw/2026-12-06-s33/run2.sh   (repo root, on the GPU machine; carry .deps .data)
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
timeout 100 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(el) s)"
grep -E "ffn_in|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | head -30
timeout 60 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -4
# a failing unit: no goals (device time), the profiles only
[ $krc = 0 ] && BASE=build-gpu BASE_ENV=TT_FFN_IN=0 REPS=2 SPECS="wt103 ptb ptb-b120" timeout $((230 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_FFN_IN=0 rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
tt_wt103_spec specs/s33-wt103.yaml 600
[ $(el) -lt 240 ] && for s in s33-wt103; do
  for e in 0 1; do
    TT_FFN_IN=$e timeout 40 build-gpu/tt-bench specs/$s.yaml --profile > $L/profile-$s-ffn$e.txt 2>&1
    echo "== $s TT_FFN_IN=$e"; grep -E "^ffn|as trained|^launches" $L/profile-$s-ffn$e.txt | cut -c1-130
  done
done
rm -f specs/s33-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
