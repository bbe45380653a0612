#!/usr/bin/env bash
# Forty-first session, calls 4 to 6 (1 GPU), on main 5ea4047 and later (the grid's plans are
# those of 22eb15b: the merge of s41-marks changes only the profile): one third of the 22-point
# shape grid against the compiled PyTorch peer, last run whole in the thirty-fifth session.
#   bash bench/raw/2026-12-07-s41/run4.sh SET   (SET 1, 2 or 3; repo root, on the GPU machine;
#                                                carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
GRID_SET=$1 GRID_BUDGET_S=$((565 - $(tt_el))) timeout $((580 - $(tt_el))) bench/grid-bench.sh $L/grid > $L/grid.txt 2>&1
echo "grid set $1 rc $? ($(tt_el) s)"; tail -14 $L/grid.txt
tt_call_end
