#!/usr/bin/env bash
# Fortieth session, first call (1 GPU), on branch s39-next: run6.sh of the thirty-ninth session
# trimmed to fit what device time is left (machines were scarce: failed starts took half of it).
# In order, each part only while time is left: test_profile and ptb's and wt103's profiles
# (s39-profile-one-stream), the whole-step test with tiles, then d1024-n160 at 1 / 3 tiles and
# the plan's, d512-n160 at 1 and the plan's, alternating, two reps, medians; then those two
# points against the compiled peer (bench/grid-bench.sh).
#   bash bench/raw/2026-12-07-s40/run1.sh   (repo root, on the GPU machine; carry .deps .data)
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
tt_gpu_test model-step 100 "^  materialized|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_lm1b_body_spec specs/t-lm1b.yaml 200
for d in 1024 512; do
    sed -e 's/^  layers: 8/  layers: 4/' -e 's/^  seq_len: 80/  seq_len: 160/' -e "s/^  d_model: 1024/  d_model: $d/" \
        -e "s/^  d_inner: 2100/  d_inner: $((4 * d))/" -e 's/^  batch: 32/  batch: 16/' -e 's/^  vocab: data/  vocab: 10000/' \
        specs/t-lm1b.yaml > specs/t-d$d-n160.yaml
    grep -q "seq_len: 160" specs/t-d$d-n160.yaml || { echo "d$d-n160 spec edit failed"; exit 1; }
    build-gpu/ttgen specs/t-d$d-n160.yaml 2>&1 | grep -o 'Wo^T and dT = dY Wo in [0-9]* tiles' | head -1
done
for rep in 1 2; do
    [ $(tt_el) -lt 300 ] || break
    tt_train_one one d1024-n160 $rep TT_MAT_TILES=1; tt_train_one three d1024-n160 $rep TT_MAT_TILES=3
    tt_train_one plan d1024-n160 $rep
    tt_train_one one d512-n160 $rep TT_MAT_TILES=1; tt_train_one plan d512-n160 $rep
done | tee $L/runs.txt
tt_medians $L/runs.txt | tee $L/medians.txt
rm -f specs/t-*.yaml
if [ $(tt_el) -lt 380 ]; then
    timeout $((520 - $(tt_el))) bench/grid-bench.sh $L/grid d1024-n160-r40-c2 d512-n160-r40-c2 > $L/grid.txt 2>&1
    echo "grid rc $? ($(tt_el) s)"; tail -6 $L/grid.txt
fi
tt_call_end
