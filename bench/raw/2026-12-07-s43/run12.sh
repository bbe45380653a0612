#!/usr/bin/env bash
# For the session after the forty-second (1 GPU), on branch s42-both: s42-norm's gradient norm
# in pieces (TT_NORM_SIDE), s42-matt's mla_mat_t (TT_MAT_T) and s42-dtmem's mla_bwd_q reading the
# materialized dT (no switch: against main's build). GPU tests of all three (mat configs with
# test_adam's norm in pieces and test_embedding's growth; test_step; test_graph), then tt-train
# alternating main's build (.snap/main), the branch, and the branch with TT_MAT_T=0 on lm1b's
# body, d1024-n160 and d512-n80 (two reps); the branch with TT_NORM_SIDE 1 and 0 on ptb.yaml and
# the wt103 shapes (two reps). The forty-third session's
# s43-tails (.snap/tails: every adaptive tail gathered and scattered in one launch each):
# test_step, then the wt103 shapes against main's build (two reps) and its profile's launches.
#   bash bench/raw/2026-12-07-s43/run12.sh   (repo root, on the GPU machine; carry .deps .data
#   .snap/main .snap/tails)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-main -j6 --target tt-train tt-bench) > "$L/build-main.log" 2>&1 &
bm=$!
(cmake -S .snap/tails -B build-tails -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-tails -j6 --target tt-train tt-bench test_gpu_model) > "$L/build-tails.log" 2>&1 &
bt=$!
tt_build_gpu || exit 1
tt_gpu_test kernels-mat 200 "FAILED|PASSED|ERROR|pieces|mla_mat_bwd" test_gpu_kernels TT_TEST_CONFIGS=mat
if grep -q FAILED $L/kernels-mat.log; then # where: memcheck on the odd materialized configs
    TT_TEST_CONFIGS=mat-odd TT_TEST_NO_VARIANTS=1 TT_TEST_NO_CUBLAS=1 timeout 200 \
        compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_kernels > $L/memcheck.log 2>&1
    echo "memcheck rc $? ($(tt_el) s)"; grep -E "ERROR SUMMARY|Invalid|at .*mla" $L/memcheck.log | head -8
fi
tt_gpu_test model-step 120 "FAILED|PASSED|ERROR|materialized" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 120 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_lm1b_body_spec specs/t-lm1b.yaml 300
point() { # NAME D N (bench/grid-bench.sh's shapes: 4 layers, F 4D, B round(2560 / N))
    sed -e "s/^  d_model: .*/  d_model: $2/" -e "s/^  seq_len: .*/  seq_len: $3/" \
        -e "s/^  d_inner: .*/  d_inner: $((4 * $2))/" -e "s/^  batch: .*/  batch: $(((2560 + $3 / 2) / $3))/" \
        -e "s/^  layers: .*/  layers: 4/" specs/t-lm1b.yaml > specs/t-$1.yaml
}
point d1024-n160 1024 160
point d512-n80 512 80
wait $bm || { tail -20 $L/build-main.log; exit 1; }
echo "main built $(tt_el) s"
wait $bt || { tail -20 $L/build-tails.log; exit 1; }
for t in test_step test_graph; do
    TT_TEST_ONLY=$t timeout 150 build-tails/tests/test_gpu_model > $L/tails-$t.log 2>&1
    echo "tails $t rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|differ" $L/tails-$t.log | tail -5
done
run_one() { # LABEL BUILD SPEC REP VAR=value
    local log=$L/$3-$1-$4.log
    rm -rf /tmp/ck-t
    env $5 timeout 120 build-$2/tt-train specs/t-$3.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$3 $1 rep $4: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*'); $(grep -o 'device memory: [0-9.]* MiB' $log) ($(tt_el) s)"
}
{
    for rep in 1 2; do
        for sp in lm1b d1024-n160 d512-n80; do
            run_one main main $sp $rep TT_X=1
            run_one both gpu $sp $rep TT_X=1
            run_one dtonly gpu $sp $rep TT_MAT_T=0
        done
        for sp in ptb wt103; do
            run_one norm gpu $sp $rep TT_NORM_SIDE=1
            run_one whole gpu $sp $rep TT_NORM_SIDE=0
        done
        run_one main main wt103 $rep TT_X=1
        run_one tails tails wt103 $rep TT_X=1
    done
} | tee $L/ab.txt
tt_medians $L/ab.txt
timeout 90 build-tails/tt-bench specs/t-wt103.yaml --profile > $L/profile-wt103-tails.txt 2>&1
echo "profile tails rc $?"; grep -E "^softmax|^sum|^launches|^kernels by" $L/profile-wt103-tails.txt
rm -f specs/t-*.yaml
tt_call_end
