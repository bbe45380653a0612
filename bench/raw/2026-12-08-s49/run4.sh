#!/usr/bin/env bash
# The forty-ninth session's fourth call (1 GPU), on branch s49-ln with vectors only where a thread
# of a row holds at most 16 values (D 1024 in a warp keeps scalar loads, as main) and the
# backward's heuristic back to main's threads a row: test_layernorm (both paths: vectors at D
# 256, none at D 1536), test_step; goals-check's lm1b-body against main's build, two reps.
#   bash bench/raw/2026-12-08-s49/run4.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_bm=
[ -x build-main/tt-train ] || tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
tt_gpu_test ln 120 "FAILED|PASSED|ERROR" test_gpu_kernels TT_TEST_ONLY=test_layernorm
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
[ -n "$tt_bm" ] && { wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }; }
BASE=build-main REPS=2 SPECS="lm1b-body" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
grep -E "rep|launches" $L/goals.txt | tail -12
tt_call_end
