#!/usr/bin/env bash
# Forty-second session, call 11 (1 GPU; raw in call11/), branch s42-norm: the gradient norm in pieces (the tied
# table's squares on the side stream after the output layer's backward, embedding_bwd_sum's
# growth of them, the rest at the end). GPU tests of the pieces and of whole steps, then tt-train
# of ptb.yaml and the wt103 shapes alternating between main's build (.snap/main), this branch's,
# and this branch's with TT_NORM_SIDE=0, three reps each; wt103's profile of main and branch.
#   bash bench/raw/2026-12-07-s42/run9.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-main -j6 --target tt-train tt-bench) > "$L/build-main.log" 2>&1 &
bm=$!
tt_build_gpu || exit 1
tt_gpu_test kernels-adam 120 "FAILED|PASSED|ERROR|pieces|grew" test_gpu_kernels TT_TEST_ONLY=test_adam
tt_gpu_test kernels-emb 120 "FAILED|PASSED|ERROR|grew" test_gpu_kernels TT_TEST_ONLY=test_embedding
tt_gpu_test model-step 240 "FAILED|PASSED|ERROR| 0 of" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 200 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
wait $bm || { tail -20 $L/build-main.log; exit 1; }
echo "main built $(tt_el) s"
run_one() { # LABEL BUILD SPEC REP [VAR=value]
    local log=$L/$3-$1-$4.log
    rm -rf /tmp/ck-t
    env ${5:-TT_X=1} timeout 120 build-$2/tt-train specs/t-$3.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$3 $1 rep $4: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*') ($(tt_el) s)"
}
for rep in 1 2 3; do
    for sp in ptb wt103; do
        run_one main main $sp $rep
        run_one norm gpu $sp $rep
        run_one off gpu $sp $rep TT_NORM_SIDE=0
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
for b in main gpu; do
    timeout 90 build-$b/tt-bench specs/t-wt103.yaml --profile > $L/profile-wt103-$b.txt 2>&1
    echo "profile $b rc $?"; grep -E "^optimizer|^sum|one stream, as profiled" $L/profile-wt103-$b.txt | cut -c1-230
done
rm -f specs/t-*.yaml
tt_call_end
