#!/usr/bin/env bash
# The forty-sixth session's first call (1 GPU), on main: test_gemm first (its tt_gemm_bwd_w_ldw
# case, on main untried on a GPU); bench/strategy-check.sh at the grid's small-D points and the
# shipped shapes (the step as trained, fused against materialized, beside the plan's choice and
# the cost model's estimates: ptb-b120 trained 1.039x faster materialized in the forty-fifth
# session while the plan keeps fused); the materialized attention's tiles of positions 1 to 6
# at lm1b's body (tt-train, one rep each); d256-n160 (the grid's median hinge) fused against
# materialized in training, two reps; then, while time is left, tiles 1 to 6 at d1024-n160.
#   bash bench/raw/2026-12-07-s46/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test gemm 90 "FAILED|PASSED|ERROR|ldw" test_gpu_kernels TT_TEST_ONLY=test_gemm
bench/strategy-check.sh $L/strategy ptb ptb-b120 d128-n80-r40-c2 d128-n160-r40-c2 \
    d256-n32-r40-c2 d256-n80-r40-c2 d256-n160-r40-c2 d512-n80-r40-c2 wt103
echo "strategy done ($(tt_el) s)"
tt_lm1b_body_spec specs/t-lm1b.yaml 300
printf 'kernels:\n  arch: auto\n' >> specs/t-lm1b.yaml
bench/grid-bench.sh --specs /tmp/gs d1024-n160-r40-c2 d256-n160-r40-c2 > /dev/null
tt_local_spec /tmp/gs/grid-d1024-n160-r40-c2.yaml specs/t-d1024n160.yaml
tt_local_spec /tmp/gs/grid-d256-n160-r40-c2.yaml specs/t-d256n160.yaml
for s in lm1b d1024n160; do
    tail -2 specs/t-$s.yaml | grep -q '^  arch: auto$' || { echo "specs/t-$s.yaml: no kernels section last"; exit 1; }
    for t in 1 2 3 4 5 6; do { cat specs/t-$s.yaml; echo "  attention_tiles: $t"; } > specs/t-$s-t$t.yaml; done
    echo "$s: $(build-gpu/ttgen specs/t-$s.yaml 2>&1 | grep -oE 'in [0-9]+ tiles of positions|strategy [a-z]+' | sort -u | tr '\n' ' ')"
done | tee $L/plans.txt
for t in 1 2 3 4 5 6; do tt_train_one tiles lm1b-t$t 1; done | tee $L/sweep.txt
{ cat specs/t-d256n160.yaml; echo "  attention: materialized"; } > specs/t-d256n160mat.yaml
for rep in 1 2; do
    tt_train_one fused d256n160 $rep
    tt_train_one mat d256n160mat $rep
done | tee $L/ab.txt
for t in 1 2 3 4 5 6; do
    [ $(tt_el) -lt 500 ] || { echo "d1024n160 tiles $t on: no time left ($(tt_el) s)"; break; }
    tt_train_one tiles d1024n160-t$t 1
done | tee -a $L/sweep.txt
rm -f specs/t-*.yaml
tt_call_end
