#!/usr/bin/env bash
# For the next session (1 GPU), branch s35-tail-side: the parameters' sums after the layers'
# backward (the cores' backward, the deferred column sums of the LayerNorms' and the FFN's
# biases: 4 launches, ~18 us alone at ptb.yaml on an H100) on the side stream beside the
# embedding's backward (TT_TAIL_SIDE=0: on the main stream before it, in the same build).
# test_gpu_model, ptb's checkpoints after 300 steps byte for byte both ways, then ptb,
# ptb-b120 and wt103 alternating with TT_TAIL_SIDE=0. No kernel changed: no units.
#   bash bench/raw/2026-12-06-s35/run9.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_same_bits TT_TAIL_SIDE
[ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_TAIL_SIDE=0 REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_TAIL_SIDE=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_call_end
