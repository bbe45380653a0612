#!/usr/bin/env bash
# s39 call 6 (1 GPU, the machine call 5 left warm), on branch s39-mat-tiles aca604b: the exact
# command that ran, one line in the call, here folded. Two reps alternating, TT_MAT_TILES=1
# against the plan's tiles (Y and dT tiled, dWo whole, the side stream), lm1b's body (3 tiles)
# and d1024-n160 (5 tiles).
. bench/gpu-env.sh; tt_call_begin; tt_build_gpu >/dev/null || exit 1; tt_lm1b_body_spec specs/t-lm1b.yaml 200
sed -e 's/^  layers: 8/  layers: 4/' -e 's/^  seq_len: 80/  seq_len: 160/' -e 's/^  d_inner: 2100/  d_inner: 4096/' \
    -e 's/^  batch: 32/  batch: 16/' -e 's/^  vocab: data/  vocab: 10000/' specs/t-lm1b.yaml > specs/t-d1024-n160.yaml
for rep in 1 2; do
    tt_train_one one lm1b $rep TT_MAT_TILES=1; tt_train_one plan lm1b $rep; [ $(tt_el) -lt 90 ] || break
    tt_train_one one d1024-n160 $rep TT_MAT_TILES=1; tt_train_one plan d1024-n160 $rep; [ $(tt_el) -lt 110 ] || break
done | tee $L/runs.txt; tt_medians $L/runs.txt; rm -f specs/t-*.yaml; tt_call_end
