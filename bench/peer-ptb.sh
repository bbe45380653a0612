#!/usr/bin/env bash
# Issue 4's comparison on specs/ptb.yaml, in one call on the GPU machine: our trainer's tokens/s
# and the PyTorch peer's (bench/torch_tt.py: eager and torch.compile, tf32 and bf16 autocast),
# and a check that both compute the same perplexity from the same weights (our checkpoint).
#   bench/peer-ptb.sh OUTDIR [PRECISION]   (after build-gpu/ is built; corpus from .data/ptb;
#                                           our precision, default the spec's bf16)
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1 precision=${2:-bf16}
. bench/gpu-env.sh
values=10000,256,3,40,2,32,2100,32,0.3,true,0.1   # V,D,L,R,H,N,F,B,dropout,causal,eps of ptb.yaml
tt_local_spec specs/ptb.yaml specs/ptb-peer.yaml -e "s/precision: bf16/precision: $precision/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 3000/"
rm -rf /tmp/ck-peer
build-gpu/tt-train specs/ptb-peer.yaml --checkpoint-dir /tmp/ck-peer --log-every 500 2>&1 | tee "$out/ours-train.log" | tail -4
build-gpu/tt-eval specs/ptb-peer.yaml --checkpoint /tmp/ck-peer --split valid 2>&1 | tee "$out/ours-eval.log"
python3 bench/torch_tt.py check "$values" /tmp/ck-peer/step-00003000 .data/ptb/ptb.valid.txt 2>&1 | tee "$out/peer-check.log"
for mode in "" "--bf16" "--compile" "--compile --bf16"; do
    python3 bench/torch_tt.py time "$values" $mode --steps 100 2>&1 | grep -v Warning | tail -1 | tee -a "$out/peer-time.log"
done
rm -f specs/ptb-peer.yaml
