#!/usr/bin/env bash
# For the next session (1 GPU), branch s35-zero-side: the gradients' zeroing (a memset for each
# stretch between the gradients a step writes whole: 32 a wt103 step) on the side stream beside
# the forward, joined before the output layer's backward (TT_ZERO_SIDE=0: on the main stream at
# the step's start, in the same build). test_gpu_model, ptb's checkpoints byte for byte both
# ways, then ptb, ptb-b120 and wt103 alternating with TT_ZERO_SIDE=0. No kernel changed.
#   bash bench/raw/2026-12-06-s35/run10.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_same_bits TT_ZERO_SIDE
[ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_ZERO_SIDE=0 REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_ZERO_SIDE=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_call_end
