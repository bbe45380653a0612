#!/usr/bin/env bash
# Fortieth session, fourth call (1 GPU, the same warm machine), on main: ptb.yaml at batch 120 and
# lm1b.yaml's body trained, two reps each, late-window medians (as given to the device tool).
. bench/gpu-env.sh; tt_call_begin; tt_build_gpu; tt_local_spec specs/ptb.yaml specs/t-ptb120.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1500/" -e "s/batch: 32/batch: 120/"; tt_lm1b_body_spec specs/t-lm1b.yaml 200; for r in 1 2; do tt_train_one main ptb120 $r; tt_train_one main lm1b $r; done | tee $L/runs.txt; tt_medians $L/runs.txt; for f in $L/lm1b-main-*.log; do grep MFU $f | tail -1; done; tt_call_end
