#!/usr/bin/env bash
# The forty-ninth session's third call (1 GPU), on branch s49-ln with LayerNorm's threads a row
# tunable and the backward's heuristic at most 16 values a thread (lm1b's D 1024: 64 threads a
# row, 128 registers, where a warp a row took 255): the LayerNorm kernels against the CPU (every
# variant the tuner may choose among them), memcheck of test_layernorm, test_step; `ttgen --tune`
# of lm1b's body with the attention materialized (no attention tunables:
# the LayerNorms' variants timed at the trainer's rows, in a cache of their own so that the runs
# after keep the heuristics); then goals-check's lm1b-body (wt103's D 256 plans as in call 2),
# alternating with main's build (kept from the calls before on a warm machine, else built here), two reps.
#   bash bench/raw/2026-12-08-s49/run3.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_bm=
[ -x build-main/tt-train ] || tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
tt_gpu_test ln 120 "FAILED|PASSED|ERROR|wide" test_gpu_kernels TT_TEST_ONLY=test_layernorm
TT_TEST_ONLY=test_layernorm timeout 150 compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_kernels > $L/memcheck.log 2>&1 &
mc=$!
tt_gpu_test units 300 "FAILED|PASSED|ERROR|NOT CAUGHT|residual_ln_bwd .*lm1b" test_gpu_kernels "TT_TEST_ONLY=test_units_*"
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
wait $mc; echo "memcheck rc $? ($(tt_el) s)"; grep -E "ERROR SUMMARY|FAILED|PASSED" $L/memcheck.log | tail -3
for d in 1024; do
    tt_lm1b_body_spec specs/tune-d$d.yaml 200
    sed -i "s/d_model: 1024/d_model: $d/" specs/tune-d$d.yaml
    printf 'kernels:\n  attention: materialized\n' >> specs/tune-d$d.yaml
    TTGEN_CACHE_DIR=/tmp/tune-cache timeout 90 stdbuf -oL build-gpu/ttgen specs/tune-d$d.yaml --tune --tune-iters 20 > $L/tune-d$d.txt 2>&1
    echo "tune d$d rc $? ($(tt_el) s)"
    awk '/^(residual_ln|layernorm)/ { on = 1 } /^$/ { on = 0 } on' $L/tune-d$d.txt | grep -v "skipped" | cut -c1-110 | head -40
done
rm -f specs/tune-d*.yaml
[ -n "$tt_bm" ] && { wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }; }
BASE=build-main REPS=2 SPECS="lm1b-body" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
grep -E "rep|launches" $L/goals.txt | tail -12
grep -E "^layernorm|^sum|replayed" $L/goals/profile-wt103.txt
echo "goals done $(tt_el) s"
tt_lm1b_body_spec specs/goal-lm1b-body.yaml 200
timeout 100 build-gpu/tt-bench specs/goal-lm1b-body.yaml --profile > $L/profile-lm1b.txt 2>&1
grep -E "^layernorm|^sum|replayed" $L/profile-lm1b.txt
rm -f specs/goal-*.yaml
tt_call_end
