#!/usr/bin/env bash
# The fused products' second call (after run1.sh's units passed; same branch, s50-loss): trained
# with kernels.loss / kernels.ffn fused against products, the same build, alternating: wt103
# (loss, ffn, both), ptb and ptb at batch 120 (both), a second rep while time is left; the
# profiles of wt103 both ways.
# The branch: on main, git apply bench/raw/2026-12-08-s50/s50-loss.diff (git checkout -b s50-loss
# first, and commit it there), then
# Here: bash bench/raw/2026-12-08-s50/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1200/"
tt_local_spec specs/ptb.yaml specs/t-ptbb.yaml -e "s/batch: 32/batch: 120/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
# variant SRC DST KEYS...: SRC with these kernels keys
variant() {
    local src=$1 dst=$2
    shift 2
    grep -v "^kernels:\|^  arch:\|^  loss:\|^  ffn:" specs/t-$src.yaml > specs/t-$dst.yaml
    printf 'kernels:\n' >> specs/t-$dst.yaml
    for kv in "$@"; do printf '  %s\n' "$kv" >> specs/t-$dst.yaml; done
}
variant wt103 wt103l "loss: fused"
variant wt103 wt103f "ffn: fused"
variant wt103 wt103b "loss: fused" "ffn: fused"
variant ptb ptbf "loss: fused" "ffn: fused"
variant ptbb ptbbf "loss: fused" "ffn: fused"
tail -4 specs/t-wt103b.yaml
for rep in 1 2; do
    [ $rep = 2 ] && [ $(tt_el) -gt 300 ] && break # a second rep only while time is left
    for s in wt103 wt103l wt103f wt103b ptb ptbf ptbb ptbbf; do
        tt_train_one x $s $rep
    done
done | tee $L/runs.txt
tt_medians $L/runs.txt
for s in wt103 wt103b; do
    timeout 100 build-gpu/tt-bench specs/t-$s.yaml --profile > $L/profile-$s.txt 2>&1
    grep -E "^softmax|^ffn|^sum|as trained|launches" $L/profile-$s.txt
done
rm -f specs/t-*.yaml
tt_call_end
