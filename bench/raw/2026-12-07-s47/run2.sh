#!/usr/bin/env bash
# The forty-seventh session's second call (1 GPU), after run1.sh (s47-pipe's tests passed and
# it merged): bench/strategy-check.sh's replayed graphs, fused against materialized, at the
# shapes where the attention's parts and the trained rates disagreed (ptb, ptb-b120, d256-n32,
# d256-n80) and three where fused won (d256-n160, d128-n80, wt103): with the host's time
# between steps hidden, the replayed graph is what the cost model at small N should match; then
# the rest of the grid's points whose plans moved in the forty-fifth session, against the peer.
# First, the review's GPU-host mends (s47-mend.diff: a pending step's `reduced` taken from
# lm->comm, one grad_norm call with the guard NULL where unguarded; test_adam checking the step
# guard itself: first_bad, skip, the kept word, halt), tested by test_adam, test_pipelined,
# test_graph and test_step before anything is timed.
# On main: git apply bench/raw/2026-12-07-s47/s47-mend.diff, then
#   bash bench/raw/2026-12-07-s47/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test adam 60 "FAILED|PASSED|ERROR|guard" test_gpu_kernels TT_TEST_ONLY=test_adam
tt_gpu_test pipe 150 "FAILED|PASSED|ERROR|halted|first non-finite|differs" test_gpu_model TT_TEST_ONLY=test_pipelined
tt_gpu_test graph 150 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
bench/strategy-check.sh $L/strategy ptb ptb-b120 d256-n32-r40-c2 d256-n80-r40-c2 d256-n160-r40-c2 \
    d128-n80-r40-c2 wt103
echo "strategy done $(tt_el) s"
GRID_BUDGET_S=$((${DEADLINE_S:-570} - $(tt_el))) bench/grid-bench.sh $L/grid d1024-n80-r128-c2 \
    d1024-n80-r40-c4 d512-n160-r40-c2 d1024-n80-r16-c2
cat $L/grid/table.txt 2>/dev/null
tt_call_end
