#!/usr/bin/env bash
# The forty-eighth session's second call (1 GPU), on branch s48-cost (the strategy's cost model
# refitted to the first call's replayed steps: ptb, ptb at batch 120, wt2 and the grid's N 32
# points at D <= 256 now materialize). Against main's build (.snap/main from `git archive main`,
# built here into build-main/): test_step (both strategies' whole steps against the CPU), the
# replayed graphs of d128-n32 both ways (the one grid point whose plan changed unmeasured),
# goals-check's ptb and ptb-b120 trained, alternating with main's, two reps; then the grid's
# points whose plan changed against the compiled peer, and d256-n80-r128-c2 if time is left.
# Here: rm -rf .snap/main && mkdir -p .snap/main && git archive main | tar -x -C .snap/main --exclude=bench/raw
#   bash bench/raw/2026-12-07-s48/run1.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
tt_gpu_test step 100 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
bench/strategy-check.sh $L/strategy d128-n32-r40-c2 ptb
echo "strategy done $(tt_el) s"
wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }
BASE=build-main REPS=2 SPECS="ptb ptb-b120" bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
grep -E "rep|ratio|\|" $L/goals.txt | tail -12
echo "goals done $(tt_el) s"
left=$((${DEADLINE_S:-560} - $(tt_el)))
if [ $left -ge 60 ]; then
    GRID_BUDGET_S=$left bench/grid-bench.sh $L/grid d128-n32-r40-c2 d256-n32-r40-c2 d256-n80-r128-c2
    cat $L/grid/table.txt 2>/dev/null
fi
tt_call_end
