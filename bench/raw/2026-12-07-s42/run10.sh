#!/usr/bin/env bash
# Forty-second session, prepared and not run (no device time left; run11.sh on s42-both
# supersedes it), branch s42-norm after call 11: the table's squares on a
# stream of their own. GPU tests (ptb's kernel configs: test_adam's norm in pieces, test_embedding's
# growth; test_step, test_graph), then tt-train of ptb.yaml and the wt103 shapes with TT_NORM_SIDE
# 1 and 0 alternating (0: the whole norm at the end, as main), three reps; wt103's profile of both.
#   bash bench/raw/2026-12-07-s42/run10.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels-ptb 150 "FAILED|PASSED|ERROR|pieces" test_gpu_kernels TT_TEST_CONFIGS=ptb
tt_gpu_test model-step 120 "FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 120 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
run_one() { # LABEL SPEC REP TT_NORM_SIDE
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    TT_NORM_SIDE=$4 timeout 120 build-gpu/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*') ($(tt_el) s)"
}
for rep in 1 2 3; do
    for sp in ptb wt103; do
        run_one norm $sp $rep 1
        run_one off $sp $rep 0
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
for v in 1 0; do
    TT_NORM_SIDE=$v timeout 90 build-gpu/tt-bench specs/t-wt103.yaml --profile > $L/profile-wt103-$v.txt 2>&1
    echo "profile TT_NORM_SIDE=$v rc $?"; grep -o "The step as trained.*one stream's" $L/profile-wt103-$v.txt
done
rm -f specs/t-*.yaml
tt_call_end
