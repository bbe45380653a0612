#!/usr/bin/env bash
# Forty-second session, call 10 (1 GPU; raw in call10/), branch s42-matt: the materialized attention's T formed
# by mla_mat_t (the fused forward's stage 1, masked in registers, written once) in place of
# mla_mat_prep's KV, a batched product and mla_mat_mask. GPU tests of the materialized path,
# then tt-train alternating between main's build (.snap/main, `git archive main`) and this
# branch's: lm1b's body and two materialized grid points, two reps each; lm1b's profile of both.
#   bash bench/raw/2026-12-07-s42/run8.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-main -j6 --target tt-train tt-bench) > "$L/build-main.log" 2>&1 &
bm=$!
tt_build_gpu || exit 1
tt_gpu_test kernels-mat 200 "FAILED|PASSED|ERROR|mla_mat" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 240 "FAILED|PASSED|ERROR|materialized" test_gpu_model TT_TEST_ONLY=test_step
wait $bm || { tail -20 $L/build-main.log; exit 1; }
echo "main built $(tt_el) s"
tt_lm1b_body_spec specs/t-lm1b.yaml 300
# grid points (bench/grid-bench.sh's shapes: 4 layers, F 4D, B round(2560 / N)) from lm1b's body
point() { # NAME D N
    sed -e "s/^  d_model: .*/  d_model: $2/" -e "s/^  seq_len: .*/  seq_len: $3/" \
        -e "s/^  d_inner: .*/  d_inner: $((4 * $2))/" -e "s/^  batch: .*/  batch: $(((2560 + $3 / 2) / $3))/" \
        -e "s/^  layers: .*/  layers: 4/" specs/t-lm1b.yaml > specs/t-$1.yaml
}
point d1024-n160 1024 160
point d512-n80 512 80
run_one() { # BUILD SPEC REP
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    timeout 150 build-$1/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 20 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*') ($(tt_el) s)"
}
for rep in 1 2; do
    for sp in lm1b d1024-n160 d512-n80; do
        for b in main gpu; do run_one $b $sp $rep; done
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
for b in main gpu; do
    timeout 90 build-$b/tt-bench specs/t-lm1b.yaml --profile > $L/profile-lm1b-$b.txt 2>&1
    echo "profile $b rc $?"; grep -E "^attention|^sum|one stream, as profiled" $L/profile-lm1b-$b.txt | cut -c1-200
done
rm -f specs/t-*.yaml
tt_call_end
