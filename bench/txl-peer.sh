#!/usr/bin/env bash
# Issue 5's check that bench/torch_txl.py (MODEL.md section 3 in PyTorch) computes what our
# Transformer-XL computes: a 20-step run of specs/txl-ptb.yaml (fp32) on the GPU, then the same
# checkpoint's perplexity on the first 400 lines of PTB's valid split in tt-eval on the GPU, in
# tt-eval on the CPU reference and in the peer, at the spec's eval lengths and with a longer
# memory and clamping (all read the split as B streams in segments with memory).
#   bench/txl-peer.sh OUTDIR     (after build-gpu/ is built, or TT_BIN=DIR; corpus from .data/ptb;
#                                 torch there; about a minute of CPU)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/txl-peer.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
data=../shared/data
[ -d .data ] && data=.data
head -n 400 $data/ptb/ptb.valid.txt > /tmp/txl-peer-valid.txt
ck=/tmp/ck-txl-peer
rm -rf "$ck"
status=0
# V,D,L,H,DH,N,M,F,B,dropout,dropatt,clamp,EVAL_N,EVAL_M,EVAL_CLAMP of txl-ptb.yaml, batch 8
for ev in "32 32 0" "16 64 20"; do
    set -- $ev
    tt_local_spec specs/txl-ptb.yaml specs/txl-peer.yaml -e "s/steps: 40000/steps: 20/" \
        -e "s/batch: 32/batch: 8/" -e "s/eval_interval: 1000/eval_interval: 0/" \
        -e "s|^  valid: .*|  valid: /tmp/txl-peer-valid.txt|" -e "s/precision: bf16/precision: fp32/"
    printf 'eval:\n  tgt_len: %s\n  mem_len: %s\n  clamp_len: %s\n' "$1" "$2" "$3" >> specs/txl-peer.yaml
    [ -d "$ck" ] || ${TT_BIN:-build-gpu}/tt-train specs/txl-peer.yaml --device cuda --checkpoint-dir "$ck" \
        --log-every 10 > "$out/ours-train.log" 2>&1 || { tail "$out/ours-train.log"; status=1; break; }
    ${TT_BIN:-build-gpu}/tt-eval specs/txl-peer.yaml --device cuda --checkpoint "$ck" 2>&1 | tee -a "$out/ours-eval.log"
    g=$(tail -1 "$out/ours-eval.log" | awk '{ print $3 }')
    ${TT_BIN:-build-gpu}/tt-eval specs/txl-peer.yaml --device cpu --checkpoint "$ck" 2>&1 | tee -a "$out/ours-eval.log"
    a=$(tail -1 "$out/ours-eval.log" | awk '{ print $3 }')
    python3 bench/torch_txl.py check "10000,256,3,8,32,32,32,2100,8,0.3,0.0,0,$1,$2,$3" \
        "$ck/step-00000020" /tmp/txl-peer-valid.txt 2>&1 | tee -a "$out/peer-check.log"
    b=$(tail -1 "$out/peer-check.log" | awk '{ print $3 }')
    awk -v a="$a" -v b="$b" -v g="$g" -v ev="$ev" 'function same(x, y,  d) { d = (x - y) / x; d = d < 0 ? -d : d
            return x != "" && y != "" && d < 1e-5 }
        BEGIN { printf "eval %s: tt-eval gpu %s, cpu %s, peer %s: %s\n", ev, g, a, b,
                same(a, b) && same(g, b) ? "same" : "DIFFERENT" }' | tee -a "$out/table.txt"
done
rm -rf "$ck" specs/txl-peer.yaml
grep -q DIFFERENT "$out/table.txt" && status=1
exit $status
