#!/usr/bin/env bash
# For the next session's first call (1 GPU), on branch s39-next (s39-mat-tiles with
# s39-profile-one-stream). First tt-bench --profile's new one-stream step: test_profile, and
# ptb.yaml's and the wt103 shapes' profiles (the parts against one stream, and as trained).
# Then s39-mat-tiles: the materialized attention's Y = T Wo^T and dT = dY Wo in tiles of
# positions under the causal mask, dWo one product, the side stream beside (thirty-ninth session: lm1b's body, N 80, 0.994x and 0.979x;
# d1024-n160 1.018x and 1.019x; bench/RESULTS.md). Whether to plan tiles at N 160 only, and how
# many: the GPU tests of the tiles, then one build alternating, three reps, at the grid's two
# N 160 points: d1024-n160 at 1 tile (as main), 3 and 5 (the plan's); d512-n160 at 1 and the
# plan's (4); medians. Then those two points against the compiled peer with the plan's tiles
# (bench/grid-bench.sh), and, as time allows, a ptb step's kernels under Nsight Compute.
#   bash bench/raw/2026-12-07-s39/run6.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test bench-cli 60 "FAILED|PASSED|ERROR|one stream" test_bench_cli TT_TEST_ONLY=test_profile
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
for sp in ptb wt103; do
    timeout 60 build-gpu/tt-bench specs/t-$sp.yaml --profile > $L/profile-$sp.txt 2>&1
    echo "profile $sp rc $?: $(grep -o 'one stream, as profiled.*of one stream.s' $L/profile-$sp.txt)"
done
tt_gpu_test kernels 120 "^  mla_mat|FAILED|PASSED|NOT CAUGHT|ERROR|FAILS" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 120 "^  materialized|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 90 "tiles step 6|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_lm1b_body_spec specs/t-lm1b.yaml 200
for d in 1024 512; do
    sed -e 's/^  layers: 8/  layers: 4/' -e 's/^  seq_len: 80/  seq_len: 160/' -e "s/^  d_model: 1024/  d_model: $d/" \
        -e "s/^  d_inner: 2100/  d_inner: $((4 * d))/" -e 's/^  batch: 32/  batch: 16/' -e 's/^  vocab: data/  vocab: 10000/' \
        specs/t-lm1b.yaml > specs/t-d$d-n160.yaml
    grep -q "seq_len: 160" specs/t-d$d-n160.yaml || { echo "d$d-n160 spec edit failed"; exit 1; }
    build-gpu/ttgen specs/t-d$d-n160.yaml 2>&1 | grep -o 'Wo^T and dT = dY Wo in [0-9]* tiles' | head -1
done
for rep in 1 2 3; do
    tt_train_one one d1024-n160 $rep TT_MAT_TILES=1; tt_train_one three d1024-n160 $rep TT_MAT_TILES=3
    tt_train_one plan d1024-n160 $rep
    tt_train_one one d512-n160 $rep TT_MAT_TILES=1; tt_train_one plan d512-n160 $rep
    [ $(tt_el) -lt 300 ] || break
done | tee $L/runs.txt
tt_medians $L/runs.txt | tee $L/medians.txt
rm -f specs/t-*.yaml
timeout $((500 - $(tt_el))) bench/grid-bench.sh $L/grid d1024-n160-r40-c2 d512-n160-r40-c2 > $L/grid.txt 2>&1
echo "grid rc $? ($(tt_el) s)"; tail -6 $L/grid.txt
if [ $(tt_el) -lt 420 ]; then
    timeout $((560 - $(tt_el))) bench/profile-step.sh $L/ptb ptb > /dev/null 2>&1; echo "profile-step ptb rc $? ($(tt_el) s)"
    head -24 $L/ptb/step-breakdown.txt 2>/dev/null; tail -1 $L/ptb/step-breakdown.txt 2>/dev/null
fi
tt_call_end
