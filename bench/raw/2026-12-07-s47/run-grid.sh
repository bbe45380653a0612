#!/usr/bin/env bash
# The forty-seventh session: issue 17's grid points nearest the median (d256-n160 3.81x,
# d512-n80 3.77x, d256-n80-key 4.17x, d256-n80-r128 4.21x) and those whose plans moved in the
# forty-fifth session (d512-n160, d1024-n80 r16, r128, c4), against the compiled peer, with the
# pipelined trainer (main after s46-pipe's merge).
#   bash bench/raw/2026-12-07-s47/run-grid.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
GRID_BUDGET_S=$((560 - $(tt_el))) bench/grid-bench.sh $L/grid d256-n160-r40-c2 d512-n80-r40-c2 \
    d256-n80-r40-c2-key d256-n80-r128-c2 d512-n160-r40-c2 d1024-n80-r16-c2 d1024-n80-r128-c2 \
    d1024-n80-r40-c4
tt_call_end
