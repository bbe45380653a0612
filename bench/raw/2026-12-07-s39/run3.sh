#!/usr/bin/env bash
# s39 call 4 (1 GPU), on branch s39-mat-tiles: the materialized attention's products with Wo in
# tiles of positions under the causal mask (templates/mla_mat.cu's mla_mat_rows, gpu/mla_mat.c).
# First every GPU unit (test_gpu_kernels: the mat configs at 1, 2, 4, 5 and 13 tiles, odd N)
# and test_gpu_model's test_step (materialized at 3 and 16 tiles against the CPU) and
# test_graph (4 tiles: the same bits in every mode). Then one build under two settings,
# alternating, three reps: the plan's tiles against TT_MAT_TILES=1 (one product over every
# column, as main), at lm1b's body (D 1024, N 80: 3 tiles) and at the grid's worst point
# d1024-n160 (B 16: 5 tiles), with medians; lm1b's body also at 5 tiles; then lm1b's body's
# step profile both ways.
#   bash bench/raw/2026-12-07-s39/run3.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels rc $? ($(tt_el) s)"
grep -E "^  mla_mat.*(mat|lm1b)|FAILED|PASSED|NOT CAUGHT|ERROR|FAILS" $L/kernels.log | cut -c1-150 | head -40
timeout 120 env TT_TEST_ONLY=test_step build-gpu/tests/test_gpu_model > $L/model-step.log 2>&1
echo "test_gpu_model (step) rc $? ($(tt_el) s)"; grep -E "materialized|FAILED|PASSED|ERROR" $L/model-step.log | tail -12
timeout 90 env TT_TEST_ONLY=test_graph build-gpu/tests/test_gpu_model > $L/model-graph.log 2>&1
echo "test_gpu_model (graph) rc $? ($(tt_el) s)"; grep -E "tiles|FAILED|PASSED|ERROR" $L/model-graph.log | tail -4
tt_lm1b_body_spec specs/t-lm1b.yaml 200
sed -e 's/^  d_model: 1024/  d_model: 1024/' -e 's/^  layers: 8/  layers: 4/' -e 's/^  seq_len: 80/  seq_len: 160/' \
    -e 's/^  d_inner: 2100/  d_inner: 4096/' -e 's/^  batch: 32/  batch: 16/' -e 's/^  vocab: data/  vocab: 10000/' \
    specs/t-lm1b.yaml > specs/t-d1024-n160.yaml
grep -q "seq_len: 160" specs/t-d1024-n160.yaml || { echo "d1024-n160 spec edit failed"; exit 1; }
build-gpu/ttgen specs/t-lm1b.yaml 2>&1 | grep -o 'Wo in [0-9]* tiles[^)]*)' | head -1
build-gpu/ttgen specs/t-d1024-n160.yaml 2>&1 | grep -o 'Wo in [0-9]* tiles[^)]*)' | head -1
one() { # label spec rep [VAR=value]
    local label=$1 spec=$2 rep=$3 log=$L/$2-$1-$3.log
    shift 3
    rm -rf /tmp/ck-t
    env "$@" timeout 120 build-gpu/tt-train specs/t-$spec.yaml --checkpoint-dir /tmp/ck-t --log-every 20 > $log 2>&1
    echo "$spec $label rep $rep: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*')"
}
for rep in 1 2 3; do
    one one lm1b $rep TT_MAT_TILES=1; one plan lm1b $rep; one five lm1b $rep TT_MAT_TILES=5
    [ $(tt_el) -lt 420 ] || break
    one one d1024-n160 $rep TT_MAT_TILES=1; one plan d1024-n160 $rep
done | tee $L/runs.txt
awk '$3 == "rep" && $8 > 0 { k = $1 " " $2; n[k]++; v[k, n[k]] = $8 }
    END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
              if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
              printf "%s: median %.0f tok/s of %d\n", k, m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2, m } }' \
    $L/runs.txt | sort | tee $L/medians.txt
for t in 1 ""; do
    f=$L/profile-lm1b-${t:-plan}.txt
    [ $(tt_el) -lt 500 ] || break
    timeout 60 env ${t:+TT_MAT_TILES=$t} build-gpu/tt-bench specs/t-lm1b.yaml --profile > $f 2>&1
    echo "profile lm1b body, tiles ${t:-plan}: $(grep '^attention' $f | tr -s ' ')"; grep 'as trained' $f | cut -c1-90
done
rm -f specs/t-*.yaml
tt_call_end
