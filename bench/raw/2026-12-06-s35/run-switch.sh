#!/usr/bin/env bash
# One of this session's switches alone, on its branch (1 GPU), if run11.sh's s35-all needs taking
# apart: SWITCH=TT_ADAM_PADS on s35-adam-pad, TT_TAIL_SIDE on s35-tail-side, TT_ZERO_SIDE on
# s35-zero-side (each on by default; 0 is the old way, to the same bits). Every GPU unit when
# UNITS=1 (the Adam branch: its unit checks the padded copies), test_gpu_model, ptb's checkpoints
# byte for byte with the switch off and on, then ptb, ptb-b120 and wt103 alternating with it off.
#   SWITCH=TT_ADAM_PADS UNITS=1 bash bench/raw/2026-12-06-s35/run-switch.sh
#   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
sw=${SWITCH:?SWITCH=TT_ADAM_PADS, TT_TAIL_SIDE or TT_ZERO_SIDE}
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
krc=0
if [ "${UNITS:-0}" = 1 ]; then
    timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
    grep -E "adam|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
fi
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_same_bits $sw; src=$?
[ $krc = 0 ] && [ $mrc = 0 ] && [ $src = 0 ] && BASE=build-gpu BASE_ENV=$sw=0 REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs $sw=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_call_end
