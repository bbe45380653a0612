#!/usr/bin/env bash
# Session 36: branch s36-fwd-td (mla_fwd's wider grid at small shapes: ptb's TD=256 -> 64)
# against main's build (.snap/main, `git archive main`), alternating: the kernels' units on
# ptb's configs and specs (the new plan's kernel among them), test_gpu_model, then ptb and ptb
# at batch 120 trained three times each way.
#   bash bench/raw/2026-12-06-s36/run13.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
build-gpu/ttgen specs/ptb.yaml | grep -A1 "^  mla_fwd_N"
TT_TEST_CONFIGS=ptb timeout 100 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels (ptb) rc $krc ($(tt_el) s)"; grep -E "mla_fwd.*ptb|FAILED|PASSED|ERROR" $L/kernels.log | head -8
timeout 60 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -3
wait $tt_bm || { echo "main's build failed"; tail -20 $L/build-main.log; }
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-main REPS=3 SPECS="ptb ptb-b120" \
    timeout $((230 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep" $L/goals.txt | cut -c1-110
tt_call_end
