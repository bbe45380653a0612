#!/usr/bin/env bash
# For the next session's first call (1 GPU), branch s35-all: this session's four unrun changes
# together (s35-keep-bits: dropout's integer test; s35-adam-pad: Adam writes the padded copies;
# s35-tail-side: the sums after the layers beside the embedding's backward; s35-zero-side: the
# gradients zeroed beside the forward), against main built in the same call (.snap/main:
# `git archive main | tar -x -C .snap/main`, carried). Every GPU unit (adam's padded copies
# among them), test_gpu_model, ptb's checkpoints byte for byte with the three switches all off
# and all on, then ptb, ptb-b120 and wt103 alternating with main's build, and, time left, with
# the three switches off in this build (what keep-bits alone gives).
#   bash bench/raw/2026-12-06-s35/run11.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build build-main -j6 --target tt-train) > $L/build-main.log 2>&1 &
bm=$!
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "adam|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_same_bits TT_ADAM_PADS TT_TAIL_SIDE TT_ZERO_SIDE; src=$?
wait $bm || { echo "main's build failed"; tail -20 $L/build-main.log; }
ok() { [ $krc = 0 ] && [ $mrc = 0 ] && [ $src = 0 ]; }
ok && [ -x build-main/tt-train ] && BASE=build-main REPS=1 SPECS="ptb ptb-b120 wt103" \
    timeout $((450 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -10
ok && [ $(tt_el) -lt 430 ] && BASE=build-gpu BASE_ENV="TT_ADAM_PADS=0 TT_TAIL_SIDE=0 TT_ZERO_SIDE=0" REPS=1 \
    SPECS="ptb ptb-b120" timeout $((570 - $(tt_el))) bench/goals-check.sh $L/goals-sw > $L/goals-sw.txt 2>&1
echo "goals vs the switches off rc $? ($(tt_el) s)"; grep -E "rep" $L/goals-sw.txt | cut -c1-150 | head -6
tt_call_end
