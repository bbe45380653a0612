#!/usr/bin/env bash
# For the session after the forty-second (1 GPU), on branch s42-both (s42-norm's norm in pieces
# and s42-matt's mla_mat_t with coalesced stores, each behind its switch): GPU tests (mat configs,
# test_adam's norm in pieces, test_embedding's growth; test_step; test_graph), then tt-train
# alternating each switch on and off in one build: TT_NORM_SIDE on ptb.yaml and the wt103 shapes
# (three reps), TT_MAT_T on lm1b's body and d1024-n160 (two reps); wt103's profile both ways.
#   bash bench/raw/2026-12-07-s42/run11.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels-mat 200 "FAILED|PASSED|ERROR|pieces" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 120 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 120 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_lm1b_body_spec specs/t-lm1b.yaml 300
sed -e "s/^  d_model: .*/  d_model: 1024/" -e "s/^  seq_len: .*/  seq_len: 160/" \
    -e "s/^  d_inner: .*/  d_inner: 4096/" -e "s/^  batch: .*/  batch: 16/" \
    -e "s/^  layers: .*/  layers: 4/" specs/t-lm1b.yaml > specs/t-d1024-n160.yaml
run_one() { # LABEL SPEC REP VAR=value
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    env $4 timeout 120 build-gpu/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*') ($(tt_el) s)"
}
{
    for rep in 1 2 3; do
        for sp in ptb wt103; do
            run_one norm $sp $rep TT_NORM_SIDE=1
            run_one whole $sp $rep TT_NORM_SIDE=0
        done
    done
    for rep in 1 2; do
        for sp in lm1b d1024-n160; do
            run_one matt $sp $rep TT_MAT_T=1
            run_one old $sp $rep TT_MAT_T=0
        done
    done
} | tee $L/ab.txt
tt_medians $L/ab.txt
for v in 1 0; do
    TT_NORM_SIDE=$v timeout 90 build-gpu/tt-bench specs/t-wt103.yaml --profile > $L/profile-wt103-$v.txt 2>&1
    echo "profile TT_NORM_SIDE=$v rc $?"; grep -o "The step as trained.*one stream's" $L/profile-wt103-$v.txt
done
rm -f specs/t-*.yaml
tt_call_end
