#!/usr/bin/env bash
# For the next session's first call (1 GPU), on branch s39-mat-tiles at its second commit: the
# materialized attention's Y = T Wo^T and dT = dY Wo in tiles of positions under the causal mask,
# the forward's tiles but the last on the side stream beside it, dWo one product over every row
# on the side stream beside the rest of the backward (call 4 of the thirty-ninth session ran
# every product tiled, in order on one stream: lm1b's body 0.994x, d1024-n160 1.018x). First the
# GPU units of the materialized attention (the mat configs: 1 to 13 tiles, no side stream) and
# test_gpu_model's test_step and test_graph (3, 4 and 16 tiles in whole steps with the side
# stream, the same bits in every mode). Then one build alternating, three reps: TT_MAT_TILES=1
# (as main), the plan's tiles, and the plan's tiles with TT_MAT_SIDE=0, at lm1b's body (3 tiles)
# and d1024-n160 (5); medians; lm1b's body's profile both ways. Last, as time allows, a ptb
# step's kernels under Nsight Compute (run5.sh's, on this tree).
#   bash bench/raw/2026-12-07-s39/run6.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 120 env TT_TEST_CONFIGS=mat build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels (mat configs) rc $? ($(tt_el) s)"
grep -E "^  mla_mat|FAILED|PASSED|NOT CAUGHT|ERROR|FAILS" $L/kernels.log | cut -c1-150 | head -30
timeout 120 env TT_TEST_ONLY=test_step build-gpu/tests/test_gpu_model > $L/model-step.log 2>&1
echo "test_gpu_model (step) rc $? ($(tt_el) s)"; grep -E "^  materialized|FAILED|PASSED|ERROR" $L/model-step.log | tail -10
timeout 90 env TT_TEST_ONLY=test_graph build-gpu/tests/test_gpu_model > $L/model-graph.log 2>&1
echo "test_gpu_model (graph) rc $? ($(tt_el) s)"; grep -E "tiles step 6|FAILED|PASSED|ERROR" $L/model-graph.log | tail -3
tt_lm1b_body_spec specs/t-lm1b.yaml 200
sed -e 's/^  layers: 8/  layers: 4/' -e 's/^  seq_len: 80/  seq_len: 160/' -e 's/^  d_inner: 2100/  d_inner: 4096/' \
    -e 's/^  batch: 32/  batch: 16/' -e 's/^  vocab: data/  vocab: 10000/' specs/t-lm1b.yaml > specs/t-d1024-n160.yaml
grep -q "seq_len: 160" specs/t-d1024-n160.yaml || { echo "d1024-n160 spec edit failed"; exit 1; }
one() { tt_train_one "$@"; }
for rep in 1 2 3; do
    one one lm1b $rep TT_MAT_TILES=1; one plan lm1b $rep; one serial lm1b $rep TT_MAT_SIDE=0
    [ $(tt_el) -lt 380 ] || break
    one one d1024-n160 $rep TT_MAT_TILES=1; one plan d1024-n160 $rep
done | tee $L/runs.txt
tt_medians $L/runs.txt | tee $L/medians.txt
for t in 1 ""; do
    f=$L/profile-lm1b-${t:-plan}.txt
    [ $(tt_el) -lt 440 ] || break
    timeout 60 env ${t:+TT_MAT_TILES=$t} build-gpu/tt-bench specs/t-lm1b.yaml --profile > $f 2>&1
    echo "profile lm1b body, tiles ${t:-plan}: $(grep '^attention' $f | tr -s ' ')"; grep 'as trained' $f | cut -c1-90
done
rm -f specs/t-*.yaml
if [ $(tt_el) -lt 420 ]; then
    timeout $((560 - $(tt_el))) bench/profile-step.sh $L/ptb ptb > /dev/null 2>&1; echo "profile-step ptb rc $? ($(tt_el) s)"
    head -24 $L/ptb/step-breakdown.txt 2>/dev/null; tail -1 $L/ptb/step-breakdown.txt 2>/dev/null
fi
tt_call_end
