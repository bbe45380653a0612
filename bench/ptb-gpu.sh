#!/usr/bin/env bash
# The real run of issue 4 on the GPU machine: train specs/ptb.yaml on PTB until validation
# perplexity stops improving (or the time limit), then score the test split with the best
# checkpoint. Run after bench/gpu-check.sh has built build-gpu/.
#   bench/ptb-gpu.sh OUTDIR SECONDS [causal: true|false] [precision] [SPEC]
# The corpus comes from .data/ptb (carried to the GPU machine), else ../shared/data/ptb. SPEC
# (default specs/ptb.yaml): specs/txl-ptb.yaml runs issue 5's Transformer-XL the same way (causal
# does not apply to it).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1 limit=$2 causal=${3:-true} precision=${4:-tf32} src=${5:-specs/ptb.yaml}
mkdir -p "$out"
. bench/gpu-env.sh
name=$(basename "$src" .yaml)-gpu-causal-$causal
[ "$src" = specs/ptb.yaml ] || name=$(basename "$src" .yaml)-gpu
tt_local_spec "$src" "specs/$name.yaml" -e "s/precision: bf16/precision: $precision/" \
    -e "s/^  causal: true/  causal: $causal/"
ck=/tmp/ck-$name
rm -rf "$ck"
timeout -s TERM "$limit" build-gpu/tt-train "specs/$name.yaml" --checkpoint-dir "$ck" \
    --patience 3 --log-every 500 --log-json "$out/$name-train.jsonl" 2>&1 | tee "$out/$name-train.log"
best=$(grep -o 'best [0-9.]* at step [0-9]*' "$out/$name-train.log" | tail -1 | awk '{print $NF}')
if [ -z "$best" ]; then best=$(sed 's/step-0*//' "$ck/latest"); fi
printf -v dir 'step-%08d' "$best"
build-gpu/tt-eval "specs/$name.yaml" --checkpoint "$ck/$dir" --split test 2>&1 | tee "$out/$name-test.log"
build-gpu/tt-eval "specs/$name.yaml" --checkpoint "$ck/$dir" --split valid 2>&1 | tee -a "$out/$name-test.log"
rm -f "specs/$name.yaml"
