#!/usr/bin/env bash
# s37's first call (1 GPU), branch s37-fold: s36-all (s36-fwd-td: mla_fwd's wider grid at small
# shapes; s36-strategy-tune: `ttgen --tune` times whole steps of both attention strategies;
# s36-mend: one home for Adam's copy order and the tail's sums) and the fold (mla_bwd_wo's last
# split of each tile adds the splits' sums into dWo: no mla_bwd_wo_sum launch), against main
# built beside it (.snap/main: `git archive main`). Every GPU unit, test_gpu_model (the strategy
# tuner's GPU half among them), then ptb, ptb-b120 and wt103 alternating with main's build, the
# wt103 step's launches.
#   bash bench/raw/2026-12-07-s37/run16.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
git log -1 --format='commit %H' 2>/dev/null | tee -a $L/gpu.txt
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
build-gpu/ttgen specs/ptb.yaml | grep -A2 "^  mla_fwd_N\|^  mla_bwd_wo_N"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels rc $krc ($(tt_el) s)"; grep -E "mla_bwd|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -24
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR|strategy" $L/model.log | tail -6
wait $tt_bm || { echo "main's build failed"; tail -20 $L/build-main.log; }
[ $krc = 0 ] && [ $mrc = 0 ] && [ -x build-main/tt-train ] && BASE=build-main REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((570 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -16
tt_call_end
