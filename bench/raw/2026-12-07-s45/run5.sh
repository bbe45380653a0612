#!/usr/bin/env bash
# Forty-fifth session (1 GPU), main with the dWo tiles: the grid's d1024-n80 points whose plans
# moved from one product to 3 tiles (r16, r128, c4; r40-c2 ran against the peer in call 4), ours
# only, TT_MAT_TILES=1 (one product each, the plan before) against the plan's 3 tiles, alternating,
# one rep each.
#   bash bench/raw/2026-12-07-s45/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
for p in d1024-n80-r16-c2 d1024-n80-r128-c2 d1024-n80-r40-c4; do
    bench/grid-bench.sh --specs /tmp/gs $p > /dev/null
    tt_local_spec /tmp/gs/grid-$p.yaml specs/t-$p.yaml
done
for p in d1024-n80-r16-c2 d1024-n80-r128-c2 d1024-n80-r40-c4; do
    tt_train_one one $p 1 TT_MAT_TILES=1
    tt_train_one tiles $p 1
done | tee $L/ab.txt
rm -f specs/t-*.yaml
tt_call_end
