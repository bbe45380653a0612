#!/usr/bin/env bash
# The forty-ninth session's LayerNorm call (1 GPU), on branch s49-ln (rows read and written in
# 16-byte vectors where the row has 32 of them), against main's build (build-main/, from
# .snap/main = `git archive main`, kept from the call before on a warm machine, else built here):
# the LayerNorm kernels against the CPU (test_layernorm, every unit config and shipped spec with
# the tuner's variants, the planted errors), memcheck of test_layernorm, the whole step against
# the CPU (test_step); then goals-check's wt103 and lm1b-body trained, alternating with main's,
# two reps, and the profiles of both on the branch.
#   bash bench/raw/2026-12-08-s49/run2.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_bm=
[ -x build-main/tt-train ] || tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
tt_gpu_test ln 120 "FAILED|PASSED|ERROR|layernorm" test_gpu_kernels TT_TEST_ONLY=test_layernorm
tt_gpu_test units 300 "FAILED|PASSED|ERROR|NOT CAUGHT|residual" test_gpu_kernels "TT_TEST_ONLY=test_units_*"
tt_gpu_test plants 120 "FAILED|PASSED|ERROR|NOT CAUGHT" test_gpu_kernels TT_TEST_ONLY=test_plants
TT_TEST_ONLY=test_layernorm timeout 150 compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_kernels > $L/memcheck.log 2>&1 &
mc=$!
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
wait $mc; echo "memcheck rc $? ($(tt_el) s)"; grep -E "ERROR SUMMARY|FAILED|PASSED" $L/memcheck.log | tail -3
[ -n "$tt_bm" ] && { wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }; }
BASE=build-main REPS=2 SPECS="wt103 lm1b-body" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
grep -E "rep|launches" $L/goals.txt | tail -12
grep -E "^layernorm|^sum|replayed" $L/goals/profile-wt103.txt
echo "goals done $(tt_el) s"
tt_lm1b_body_spec specs/goal-lm1b-body.yaml 200
timeout 120 build-gpu/tt-bench specs/goal-lm1b-body.yaml --profile > $L/profile-lm1b.txt 2>&1
grep -E "^layernorm|^sum|replayed" $L/profile-lm1b.txt
rm -f specs/goal-*.yaml
tt_call_end
