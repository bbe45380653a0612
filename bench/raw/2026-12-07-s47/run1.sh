#!/usr/bin/env bash
# The forty-seventh session's first call (1 GPU), on branch s46-pipe (+ mla_mat.c's dWo as
# if/else): the GPU tests of the pipelined trainer (test_gpu_model's test_pipelined, test_graph,
# test_step; test_gpu_kernels' test_adam; test_train_cli on the GPU), then bench/goals-check.sh
# with BASE_ENV=TT_PIPELINE=0 on the same build, alternating, two reps; then, in what time is
# left, issue 17's grid points nearest the median against the compiled peer.
# On main: git apply bench/raw/2026-12-07-s47/s47-pipe.diff (or check out branch s46-pipe), then
#   bash bench/raw/2026-12-07-s47/run1.sh   (repo root, on the GPU machine; carry .deps .data)
# DEADLINE_S (570): the seconds into the call by which the grid's last point should end (no grid
# with less than a minute left); REPS (2): goals-check's reps
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test pipe 150 "FAILED|PASSED|ERROR|halted|first non-finite|differs" test_gpu_model TT_TEST_ONLY=test_pipelined
tt_gpu_test graph 150 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test adam 60 "FAILED|PASSED|ERROR" test_gpu_kernels TT_TEST_ONLY=test_adam
tt_gpu_test train 200 "FAILED|PASSED|ERROR|pipelined" test_train_cli TT_TEST_DEVICE=cuda
BASE=build-gpu BASE_ENV=TT_PIPELINE=0 REPS=${REPS:-2} SPECS="ptb ptb-b120 wt103" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
cat $L/goals.txt | grep -E "rep|ratio|\|" | tail -20
echo "goals done $(tt_el) s"
left=$((${DEADLINE_S:-570} - $(tt_el)))
if [ $left -ge 60 ]; then
    GRID_BUDGET_S=$left bench/grid-bench.sh $L/grid d256-n160-r40-c2 d512-n80-r40-c2 \
        d256-n80-r40-c2-key d256-n80-r128-c2 d512-n160-r40-c2 d1024-n80-r16-c2
    cat $L/grid/table.txt 2>/dev/null
fi
tt_call_end
