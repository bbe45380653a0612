#!/usr/bin/env bash
# For the next session (1 GPU), branch s35-adam-pad: Adam writes the padded copies of the
# weights itself (no copy_rows launch after it; TT_ADAM_PADS=0 restores the launch in the same
# build). Every GPU unit (adam's now checks six padded copies byte for byte, the padding
# untouched), test_gpu_model, a ptb run both ways with the final checkpoints compared byte for
# byte, then ptb, ptb-b120 and wt103 alternating with TT_ADAM_PADS=0.
#   bash bench/raw/2026-12-06-s35/run8.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "adam|copy_rows|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_same_bits TT_ADAM_PADS
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_ADAM_PADS=0 REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_ADAM_PADS=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_call_end
