#!/usr/bin/env bash
# Forty-first session, last call (1 GPU): three shapes off the grid against the compiled peer
# (grid-bench.sh's off-grid points): the issue's own d_model 320, rank 24, 3 cores, N 48; a
# d_model 768, N 64, rank 48 point; d_model 384 at PTB's N 30 with position: key.
#   bash bench/raw/2026-12-07-s41/run7.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
GRID_BUDGET_S=$((215 - $(tt_el))) timeout $((240 - $(tt_el))) bench/grid-bench.sh $L/grid \
    d320-n48-r24-c3 d768-n64-r48-c2 d384-n30-r40-c2-key > $L/grid.txt 2>&1
echo "grid rc $? ($(tt_el) s)"; tail -8 $L/grid.txt
tt_call_end
