#!/usr/bin/env bash
# Fortieth session, third call (1 GPU, the same warm machine as call 2), on main b64571c+: ptb.yaml
# and the wt103 shapes trained, two reps each, late-window medians (the command as given to the
# device tool, on one line there).
. bench/gpu-env.sh; tt_call_begin; tt_build_gpu; tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1500/"; [ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt; tt_wt103_spec specs/t-wt103.yaml 600; for r in 1 2; do tt_train_one main ptb $r; tt_train_one main wt103 $r; done | tee $L/runs.txt; tt_medians $L/runs.txt; tt_call_end
