#!/usr/bin/env bash
# The forty-fourth session (1 GPU), on branch s44-dwbatch: the FFN's weight gradients of every
# layer in two strided batches after the layers' backward (TT_DW_BATCH, default 1). GPU tests
# (test_gemm's strided batch, test_step, test_graph, test_profile's one stream), then tt-train
# with TT_DW_BATCH=1 and 0 alternating on the wt103 shapes, ptb.yaml, ptb.yaml at batch 120 and
# lm1b's body, three reps; then the wt103 step's profile (launches).
#   bash bench/raw/2026-12-07-s44/run3.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test gemm 60 "FAILED|PASSED|ERROR|strided" test_gpu_kernels TT_TEST_ONLY=test_gemm
tt_gpu_test model-step 90 "FAILED|PASSED|ERROR|over" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 60 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test profile 60 "FAILED|PASSED|ERROR|parts" test_bench_cli TT_TEST_ONLY=test_profile
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
tt_lm1b_body_spec specs/t-lm1b.yaml 300
one() { # LABEL SPEC REP VAR=value
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    env $4 timeout 80 build-gpu/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*'); $(grep -o 'device memory: [0-9.]* MiB' $log) ($(tt_el) s)"
}
for rep in 1 2 3; do
    for s in wt103 ptb ptb120 lm1b; do
        one per-layer $s $rep TT_DW_BATCH=0
        one batched $s $rep TT_DW_BATCH=1
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
if [ $(tt_el) -lt 520 ]; then
    timeout $((580 - $(tt_el))) build-gpu/tt-bench specs/t-wt103.yaml --profile > $L/profile-wt103.txt 2>&1
    echo "profile rc $? ($(tt_el) s)"; head -16 $L/profile-wt103.txt
fi
rm -f specs/t-*.yaml
tt_call_end
