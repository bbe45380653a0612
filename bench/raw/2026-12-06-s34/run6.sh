#!/usr/bin/env bash
# For the next session (1 GPU), branch s34-keep-bits: dropout's test as an integer comparison of
# the draw's bits (cpu/rng.h tt_keep_threshold; the same masks bit for bit), against main in the
# same call. Every GPU unit and test_gpu_model on the branch (the masks are checked against the
# CPU's bit for bit), then wt103, ptb, ptb-b120 and txl-wt103-base alternating with main's build
# (.snap/main: `git archive main | tar -x -C .snap/main`, carried), then ncu of the dropout
# kernels both ways.
#   bash bench/raw/2026-12-06-s34/run6.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build build-main -j16 --target tt-train tt-bench) > $L/build-main.log 2>&1 || { tail -30 $L/build-main.log; exit 1; }
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "dropout|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-main REPS=2 SPECS="wt103 ptb ptb-b120 txl-wt103-base" timeout $((470 - $(tt_el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -18
tt_wt103_spec specs/s34-wt103.yaml 600
for w in main:build-main new:build-gpu; do
  IFS=: read -r name b <<< "$w"
  rm -rf /tmp/ck-ncu
  timeout 40 ncu --metrics gpu__time_duration.sum --clock-control none -k regex:'ffn_act_fwd|residual_ln_fwd|embedding_fwd' \
      -s 12 -c 12 --csv $b/tt-train specs/s34-wt103.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 5 -q \
      > $L/ncu-$name.csv 2> $L/ncu-$name.err
  echo "== ncu $name rc $? ($(tt_el) s)"; tt_ncu_durations $L/ncu-$name.csv
done
rm -f specs/s34-wt103.yaml
tt_call_end
