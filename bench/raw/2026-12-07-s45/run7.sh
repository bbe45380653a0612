#!/usr/bin/env bash
# For the next session (1 GPU), on branch s45-io (diff `raw/2026-12-07-s45/s45-io.diff`): every
# step's uploads (tokens, routes, the dropout step, the optimizer's scalars, the ranks' flag) in
# one copy from a pinned block, and the scalars and sums back in one, in place of four to five
# copies up and two down from pageable memory. The GPU tests that cover it (test_gpu_model whole,
# test_gpu_repro: two runs, a resumed one, a checkpoint between CPU and GPU; test_gpu_lib;
# test_profile), then bench/goals-check.sh with main's build (.snap/main) as its base: ptb.yaml,
# at batch 120 and the wt103 shapes, alternating, three reps, and the wt103 step's profile, whose
# new line has the trained step's graph replayed back to back (what the host between steps costs:
# whether steps submitted ahead of the last one's download would pay); the same line for ptb.yaml.
# Before the call, here:
#   rm -rf .snap/main && mkdir -p .snap/main && git archive main -- . ':!bench/raw' ':!docs' | tar -x -C .snap/main
#   bash bench/raw/2026-12-07-s45/run7.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }
tt_gpu_test model 300 "FAILED|PASSED|ERROR" test_gpu_model
tt_gpu_test repro 200 "FAILED|PASSED|ERROR" test_train_cli TT_TEST_DEVICE=cuda
tt_gpu_test lib 120 "FAILED|PASSED|ERROR" test_lib TT_TEST_DEVICE=cuda
tt_gpu_test profile 90 "FAILED|PASSED|ERROR|replayed|parts" test_bench_cli TT_TEST_ONLY=test_profile
BASE=build-main REPS=3 SPECS="ptb ptb-b120 wt103" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
tt_medians $L/goals/runs.txt
grep -E "^the step.s graph replayed" $L/goals/profile-wt103.txt
timeout 60 build-gpu/tt-bench specs/ptb.yaml --profile > $L/profile-ptb.txt 2>&1 # vocab given: no data read
echo "profile ptb rc $?: $(grep -E '^the step.s graph replayed' $L/profile-ptb.txt)"
tt_call_end
