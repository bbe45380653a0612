#!/usr/bin/env bash
# Forty-fifth session (1 GPU), branch s45-dwo-tiles: the materialized attention's dWo = dY^T T in
# the forward's tiles of positions as columns (each over the rows from its first position on),
# TT_MAT_DWO_TILES (default 1), and the cost model that counts it (d1024-n80, lm1b's body's
# shape, now 3 tiles). GPU units of the materialized path (tiles of odd N included), then
# tt-train alternating, two reps: lm1b's body main-like (TT_MAT_TILES=1: one product each, as
# main plans it) against the branch (3 tiles, dWo tiled) and TT_MAT_DWO_TILES=0 (3 tiles, dWo
# whole); d1024-n160 (5 tiles) and d512-n160 (4 tiles) with TT_MAT_DWO_TILES 1 against 0.
#   bash bench/raw/2026-12-07-s45/run3.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels-mat 120 "FAILED|PASSED|ERROR|SKIPPED" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 60 "FAILED|PASSED|ERROR|materialized" test_gpu_model TT_TEST_ONLY=test_step
tt_lm1b_body_spec specs/t-lm1b.yaml 300
for p in d1024-n160-r40-c2 d512-n160-r40-c2; do
    bench/grid-bench.sh --specs /tmp/gs $p > /dev/null
    tt_local_spec /tmp/gs/grid-$p.yaml specs/t-${p%%-r40-c2}.yaml
done
build-gpu/ttgen specs/t-lm1b.yaml 2>&1 | grep -m1 'tiles of positions' | cut -c1-200 | tee $L/tiles.txt
for rep in 1 2; do
    tt_train_one one lm1b $rep TT_MAT_TILES=1
    tt_train_one dwo lm1b $rep TT_MAT_DWO_TILES=1
    tt_train_one whole lm1b $rep TT_MAT_DWO_TILES=0
    for s in d1024-n160 d512-n160; do
        tt_train_one dwo $s $rep TT_MAT_DWO_TILES=1
        tt_train_one whole $s $rep TT_MAT_DWO_TILES=0
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
rm -f specs/t-*.yaml
tt_call_end
