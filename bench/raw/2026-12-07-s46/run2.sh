#!/usr/bin/env bash
# The forty-sixth session's second call (1 GPU), on branch s46-pipe: the trainer submits step
# k + 1 before waiting for step k's result (call 2 measured the host's time between steps at
# 0.092 ms of ptb's 0.56 and 0.347 of wt103's 4.19, H200). GPU tests first: test_gpu_model's
# test_pipelined (pipelined against one by one, to the bit; a NaN step skipped; the first
# non-finite element; a halted step), test_graph and test_step (Adam's guard in every step),
# test_gpu_kernels' test_adam, test_train_cli on the GPU (the NaN step stopped and skipped
# pipelined, its checkpoint against TT_PIPELINE=0's, and the repro runs); then
# bench/goals-check.sh with BASE_ENV=TT_PIPELINE=0 on the same build, alternating, three reps;
# then bench/strategy-check.sh (the replayed graphs, fused against materialized) at the shapes
# where the attention's parts and the trained rates disagreed.
# On main: git apply bench/raw/2026-12-07-s46/s46-pipe.diff (or check out branch s46-pipe), then
#   bash bench/raw/2026-12-07-s46/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test pipe 150 "FAILED|PASSED|ERROR|halted|first non-finite|differs" test_gpu_model TT_TEST_ONLY=test_pipelined
tt_gpu_test graph 150 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test adam 60 "FAILED|PASSED|ERROR" test_gpu_kernels TT_TEST_ONLY=test_adam
tt_gpu_test train 200 "FAILED|PASSED|ERROR|pipelined" test_train_cli TT_TEST_DEVICE=cuda
BASE=build-gpu BASE_ENV=TT_PIPELINE=0 REPS=3 SPECS="ptb ptb-b120 wt103" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
tt_medians $L/goals/runs.txt
bench/strategy-check.sh $L/strategy ptb ptb-b120 d256-n32-r40-c2 d256-n80-r40-c2 d256-n160-r40-c2 \
    d128-n80-r40-c2 wt103
tt_call_end
