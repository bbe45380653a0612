#!/usr/bin/env bash
# Issue 5's check that bench/torch_txl.py (MODEL.md section 3 in PyTorch) computes what our
# Transformer-XL computes: a 20-step run of specs/txl-ptb.yaml (fp32) on the GPU, then the same
# checkpoint's perplexity on the first 400 lines of PTB's valid split in tt-eval on the GPU, in
# tt-eval on the CPU reference and in the peer, at the spec's eval lengths and with a longer
# memory and clamping (all read the split as B streams in segments with memory); then the same
# at D 250 (10 heads x 25), whose rows the GPU pads.
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
rm -rf "$ck"-*
status=0
# V,D,L,H,DH,N,M,F,B,dropout,dropatt,clamp,EVAL_N,EVAL_M,EVAL_CLAMP of txl-ptb.yaml, batch 8; and
# once with D 250 and 10 heads x 25, whose rows (500 bytes in bf16, 1000 in fp32) the GPU pads to
# 256 as it pads txl-wt103-base's 410 to 416
for ev in "256 8 32 32 32 0" "256 8 32 16 64 20" "250 10 25 32 32 0"; do
    set -- $ev
    d=$1 h=$2 dh=$3
    shift 3
    ckd=$ck-$d
    tt_local_spec specs/txl-ptb.yaml specs/txl-peer.yaml -e "s/steps: 40000/steps: 20/" \
        -e "s/batch: 32/batch: 8/" -e "s/eval_interval: 1000/eval_interval: 0/" \
        -e "s|^  valid: .*|  valid: /tmp/txl-peer-valid.txt|" -e "s/precision: bf16/precision: fp32/" \
        -e "s/d_model: 256/d_model: $d/" -e "s/n_head: 8/n_head: $h/" -e "s/d_head: 32/d_head: $dh/"
    printf 'eval:\n  tgt_len: %s\n  mem_len: %s\n  clamp_len: %s\n' "$1" "$2" "$3" >> specs/txl-peer.yaml
    [ -d "$ckd" ] || ${TT_BIN:-build-gpu}/tt-train specs/txl-peer.yaml --device cuda --checkpoint-dir "$ckd" \
        --log-every 10 >> "$out/ours-train.log" 2>&1 || { tail "$out/ours-train.log"; status=1; break; }
    ${TT_BIN:-build-gpu}/tt-eval specs/txl-peer.yaml --device cuda --checkpoint "$ckd" 2>&1 | tee -a "$out/ours-eval.log"
    g=$(tail -1 "$out/ours-eval.log" | awk '{ print $3 }')
    ${TT_BIN:-build-gpu}/tt-eval specs/txl-peer.yaml --device cpu --checkpoint "$ckd" 2>&1 | tee -a "$out/ours-eval.log"
    a=$(tail -1 "$out/ours-eval.log" | awk '{ print $3 }')
    python3 bench/torch_txl.py check "10000,$d,3,$h,$dh,32,32,2100,8,0.3,0.0,0,$1,$2,$3" \
        "$ckd/step-00000020" /tmp/txl-peer-valid.txt 2>&1 | tee -a "$out/peer-check.log"
    b=$(tail -1 "$out/peer-check.log" | awk '{ print $3 }')
    awk -v a="$a" -v b="$b" -v g="$g" -v ev="$*" -v d="$d x $h x $dh" 'function same(x, y,  d) { d = (x - y) / x; d = d < 0 ? -d : d
            return x != "" && y != "" && d < 1e-5 }
        BEGIN { printf "D %s, eval %s: tt-eval gpu %s, cpu %s, peer %s: %s\n", d, ev, g, a, b,
                same(a, b) && same(g, b) ? "same" : "DIFFERENT" }' | tee -a "$out/table.txt"
done
rm -rf "$ck"-* specs/txl-peer.yaml
grep -q DIFFERENT "$out/table.txt" && status=1
exit $status
