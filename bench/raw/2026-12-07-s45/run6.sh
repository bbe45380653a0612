#!/usr/bin/env bash
# For the next session's first call (1 GPU), on main with the dWo tiles (a10c704 on): how many
# tiles of positions the materialized attention should take, now that dWo runs in them too. The
# cost model picks 3 at d1024-n80 (lm1b's body's shape and the grid's r16, r128 and c4 points),
# 4 at d512-n160, 5 at d1024-n160, and one product at d512-n80 and d1024-n32, costing the tiles'
# products at the dense rate, which they do not reach. tt-train one rep each with
# `kernels.attention_tiles` 1 (one product each) to 6, for lm1b's body and four grid shapes
# (variants of the spec, so the plan takes the count), then the three d1024-n80 grid points whose
# plans moved to 3 tiles, one product against the plan's; then `tt-bench --profile` of d1024-n160
# and lm1b's body.
#   bash bench/raw/2026-12-07-s45/run6.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test gemm 90 "FAILED|PASSED|ERROR|ldw" test_gpu_kernels TT_TEST_ONLY=test_gemm
tt_lm1b_body_spec specs/t-lm1b.yaml 300
printf 'kernels:\n  arch: auto\n' >> specs/t-lm1b.yaml
for p in d1024-n160-r40-c2 d512-n160-r40-c2 d512-n80-r40-c2 d1024-n32-r40-c2 d1024-n80-r16-c2 \
         d1024-n80-r128-c2 d1024-n80-r40-c4; do
    bench/grid-bench.sh --specs /tmp/gs $p > /dev/null
    tt_local_spec /tmp/gs/grid-$p.yaml specs/t-$p.yaml
done
sweep="lm1b d1024-n160-r40-c2 d512-n160-r40-c2 d512-n80-r40-c2 d1024-n32-r40-c2"
for s in $sweep d1024-n80-r16-c2 d1024-n80-r128-c2 d1024-n80-r40-c4; do
    tail -2 specs/t-$s.yaml | grep -q '^  arch: auto$' || { echo "specs/t-$s.yaml: no kernels section last"; exit 1; }
    for t in 1 2 3 4 5 6; do
        { cat specs/t-$s.yaml; echo "  attention_tiles: $t"; } > specs/t-$s-t$t.yaml
    done
    echo "$s: $(build-gpu/ttgen specs/t-$s.yaml 2>&1 | grep -oE 'in [0-9]+ tiles of positions|strategy [a-z]+' | sort -u | tr '\n' ' ')"
done | tee $L/plans.txt
for t in 1 2 3 4 5 6; do
    for s in $sweep; do tt_train_one tiles $s-t$t 1; done
done | tee $L/sweep.txt
for p in d1024-n80-r16-c2 d1024-n80-r128-c2 d1024-n80-r40-c4; do
    tt_train_one one $p-t1 1
    tt_train_one plan $p 1
done | tee $L/ab.txt
# d256-n160 (the grid's 11th of 22, fused by the cost model's 0.418 ms a layer against 0.444
# materialized, one product each: tiles would save under a tenth there): both, two reps
bench/grid-bench.sh --specs /tmp/gs d256-n160-r40-c2 > /dev/null
tt_local_spec /tmp/gs/grid-d256-n160-r40-c2.yaml specs/t-d256n160.yaml
{ cat specs/t-d256n160.yaml; echo "  attention: materialized"; } > specs/t-d256n160mat.yaml
build-gpu/ttgen specs/t-d256n160mat.yaml 2>&1 | grep -oE 'in [0-9]+ tiles of positions' | head -1
for rep in 1 2; do
    tt_train_one fused d256n160 $rep
    tt_train_one mat d256n160mat $rep
done | tee -a $L/ab.txt
for s in d1024-n160-r40-c2 lm1b; do # where the grid's worst point and lm1b's body spend a step
    timeout 90 build-gpu/tt-bench specs/t-$s.yaml --profile > $L/profile-$s.txt 2>&1
    echo "profile $s rc $? ($(tt_el) s)"; sed -n 3,14p $L/profile-$s.txt
done
rm -f specs/t-*.yaml
tt_call_end
