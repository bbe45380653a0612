#!/usr/bin/env bash
# Fortieth session, fifth call (1 GPU), on main: is lm1b's body's validation perplexity after 200
# steps with the materialized products in tiles (345 to 351 in the thirty-ninth session, on two
# cards, against 331.604 with one product on both) rounding's spread or a different function?
# The same spec and seed trained with: one product (the plan); 3 tiles, side stream and not;
# 2 tiles; one product through cublasGemmEx (TT_GEMM_LT=0: other algorithms, other roundings);
# the fused attention (the same function, other kernels). Each run's valid ppl and late tok/s.
#   bash bench/raw/2026-12-07-s40/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_lm1b_body_spec specs/t-lm1b.yaml 200
for v in "tiles3 3" "tiles2 2"; do
    set -- $v
    { cat specs/t-lm1b.yaml; printf 'kernels:\n  attention: materialized\n  attention_tiles: %s\n' $2; } > specs/t-lm1b-$1.yaml
done
{ cat specs/t-lm1b.yaml; printf 'kernels:\n  attention: fused\n'; } > specs/t-lm1b-fused.yaml
{
    tt_train_one plan lm1b 1
    tt_train_one plan lm1b-tiles3 1
    tt_train_one noside lm1b-tiles3 1 TT_MAT_SIDE=0
    tt_train_one plan lm1b-tiles2 1
    tt_train_one gemmex lm1b 1 TT_GEMM_LT=0
    tt_train_one gemmex lm1b-tiles3 1 TT_GEMM_LT=0
    [ $(tt_el) -lt 120 ] && tt_train_one plan lm1b-fused 1
} | tee $L/runs.txt
rm -f specs/t-*.yaml
tt_call_end
