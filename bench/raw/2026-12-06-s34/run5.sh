#!/usr/bin/env bash
# For a later session (1 GPU), branch s34-ffn-pipe-kb (v5 of the fused FFN products with the
# dropout threshold merged: a quad's 4 x 4 transpose so that each lane writes hd/dz and reads hd
# 16 bytes of one row, the epilogue's threshold worked out once): every GPU unit,
# test_gpu_model, then wt103/ptb/ptb-b120 alternating with TT_FFN_IN=0, then ncu of the FFN's
# kernels both ways.
#   bash bench/raw/2026-12-06-s34/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 170 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "ffn_in.*(ptb|wt103)|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 60 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_FFN_IN=0 REPS=2 SPECS="wt103 ptb ptb-b120" timeout 200 \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_FFN_IN=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_wt103_spec specs/s34-wt103.yaml 600
for e in 0 1; do
  rm -rf /tmp/ck-ncu
  TT_FFN_IN=$e timeout 40 ncu --metrics gpu__time_duration.sum --clock-control none -k regex:'ffn_in|ffn_act' \
      -s 12 -c 12 --csv build-gpu/tt-train specs/s34-wt103.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 5 -q \
      > $L/ncu-ffn$e.csv 2> $L/ncu-ffn$e.err
  echo "== ncu TT_FFN_IN=$e rc $? ($(tt_el) s)"; tt_ncu_durations $L/ncu-ffn$e.csv
done
rm -f specs/s34-wt103.yaml
tt_call_end
