#!/usr/bin/env bash
# Session 35, a shorter s34 run6.sh for the branch s35-keep-bits (dropout's test as an integer
# comparison of the draw's bits; main merged): every GPU unit and test_gpu_model, then wt103,
# ptb-b120 and ptb alternating with main's build (.snap/main, carried), no ncu. Meant to follow
# run7.sh on the same warm machine (build-gpu's objects reused).
#   bash bench/raw/2026-12-06-s35/run6b.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build build-main -j6 --target tt-train) > $L/build-main.log 2>&1 &
bm=$!
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
wait $bm || { echo "main's build failed"; tail -20 $L/build-main.log; }
[ $krc = 0 ] && [ $mrc = 0 ] && [ -x build-main/tt-train ] && BASE=build-main REPS=1 SPECS="wt103 ptb-b120 ptb" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -18
tt_call_end
