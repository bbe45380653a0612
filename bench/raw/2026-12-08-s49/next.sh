#!/usr/bin/env bash
# For the fiftieth session's first call (1 GPU), on main: what the forty-ninth left unmeasured and
# where lm1b's body goes next. Transformer-XL's D 410 LayerNorms now read vectors of 2 (14 values
# a thread): txl-wt103-base trained against the tree before the LayerNorm merge, alternating, two
# reps; then every kernel of one lm1b's body step under Nsight Compute (its attention is 40% of
# the step), and the wt103 and lm1b-body profiles.
# Here: rm -rf .snap/main && mkdir -p .snap/main && git archive 32b4fbf | tar -x -C .snap/main --exclude=bench/raw
#   bash bench/raw/2026-12-08-s49/next.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
tt_gpu_test ln 120 "FAILED|PASSED|ERROR" test_gpu_kernels TT_TEST_ONLY=test_layernorm
tt_wait_snap || exit 1
BASE=build-main REPS=2 SPECS="txl-wt103-base" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
grep -E "rep|launches" $L/goals.txt | tail -8
echo "goals done $(tt_el) s"
timeout 240 bench/profile-step.sh $L/ncu-lm1b lm1b-body > $L/ncu-lm1b.txt 2>&1
head -30 $L/ncu-lm1b.txt
tt_lm1b_body_spec specs/goal-lm1b-body.yaml 200
timeout 100 build-gpu/tt-bench specs/goal-lm1b-body.yaml --profile > $L/profile-lm1b.txt 2>&1
head -14 $L/profile-lm1b.txt
rm -f specs/goal-*.yaml
tt_call_end
