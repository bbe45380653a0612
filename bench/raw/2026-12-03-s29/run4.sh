#!/usr/bin/env bash
# s29 call 4 (1 GPU), on the branch s29-ffn-mm: ffn_mm_bwd with each tile's hd brought into shared
# memory by cp.async beside the product's operands (call 2's Nsight Compute run pointed at a
# latency-bound kernel), and TT_FFN_MM=2 (the default here: the backward's fused product alone,
# the forward's cuBLAS product and ffn_act_fwd as on main). test_gpu_kernels and test_gpu_model,
# ffn_mm_bwd against ffn_act_bwd under Nsight Compute, then the goals alternating with
# TT_FFN_MM=0 in the same build.
#   bash bench/raw/2026-12-03-s29/run4.sh   (repo root, on the GPU machine; carry .deps .data)
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
grep -E "ffn_mm|FAILED|PASSED|NOT CAUGHT" $L/kernels.log | grep -v "^  ffn_mm.*(ptb|odd|causal|txl)" | tail -8
timeout 80 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "FAILED|PASSED" $L/model.log | tail -3
spec=specs/s29-wt103.yaml
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
tt_wt103_spec "$spec" 200000
for mode in 0 2; do
  rm -rf /tmp/ck29; TT_FFN_MM=$mode build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck29 --stop-after 30 -q > $L/warm-$mode.log 2>&1
  rm -rf /tmp/ck29
  TT_FFN_MM=$mode timeout 60 ncu --metrics gpu__time_duration.sum --clock-control none -k regex:'ffn_act_bwd|ffn_mm_bwd' -s 30 -c 6 --csv \
      build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck29 --stop-after 3 -q 2>/dev/null |
    python3 -c "import csv,sys; [print('  ncu mode $mode', r[-1].rjust(10), r[4][:50]) for r in csv.reader(sys.stdin) if len(r) > 10 and r[-3] == 'gpu__time_duration.sum']" | tee $L/ncu-$mode.txt
  rm -rf /tmp/ck29
done
rm -f "$spec"
echo "ncu $(el) s"
TT_FFN_MM=2 BASE=build-gpu BASE_ENV=TT_FFN_MM=0 REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((500 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
grep -E "^ffn|^sum|as trained" $L/goals/profile-wt103.txt | cut -c1-120
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
