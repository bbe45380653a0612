#!/usr/bin/env bash
# s37 call 2 (1 GPU), on the tree as carried (s36-all or what landed from it): grid points
# against the compiled PyTorch peer in the same call. First the two whose mla_fwd the wider-grid
# heuristic (s36-fwd-td) changes (d128-n32, d256-n32), then the tightest of the last full grid
# (d1024-n160, d512-n160, d1024-n80-r128, d1024-n80-key), then more of d1024/d512 as the budget
# allows. build-gpu/ is reused where the call before left it.
#   bash bench/raw/2026-12-07-s37/run15.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
git log -1 --format='commit %H' 2>/dev/null | tee -a $L/gpu.txt
tt_build_gpu || exit 1
GRID_BUDGET_S=$((540 - $(tt_el))) timeout $((570 - $(tt_el))) bench/grid-bench.sh $L/grid \
    d128-n32-r40-c2 d256-n32-r40-c2 d1024-n160-r40-c2 d512-n160-r40-c2 d1024-n80-r128-c2 \
    d1024-n80-r40-c2-key d1024-n80-r40-c2 d512-n80-r40-c2 d1024-n80-r40-c4 > $L/grid.txt 2>&1
echo "grid rc $? ($(tt_el) s)"; tail -14 $L/grid.txt
tt_call_end
