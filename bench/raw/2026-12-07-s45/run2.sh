#!/usr/bin/env bash
# Forty-fifth session, branch s45-defer-proxy (timing only): the word table's Adam run beside the
# next step's forward (on the side stream, before its gradients are zeroed) instead of after the
# backward, TT_ADAM_DEFER_PROXY=1 against 0 in the same build, alternating, three reps: does the
# overlap pay? (The proxy's input rows are a step stale and its table's lr one step ahead: its
# perplexity is not the model's; the rate is what is measured.)
#   bash bench/raw/2026-12-07-s45/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
tt_lm1b_body_spec specs/t-lm1b.yaml 300
for rep in 1 2 3; do
    for s in wt103 ptb120 lm1b ptb; do
        tt_train_one main $s $rep TT_ADAM_DEFER_PROXY=0
        tt_train_one proxy $s $rep TT_ADAM_DEFER_PROXY=1
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
rm -f specs/t-*.yaml
tt_call_end
