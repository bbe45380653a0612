#!/usr/bin/env bash
# A checkpoint trained on the GPU evaluates on the CPU to the same perplexity, and the other way
# round (issue 4): specs/tiny.yaml on PTB, 300 steps on each device, each checkpoint scored on
# both. Run on the GPU machine after build-gpu/ is built; corpus from .data/ptb.
#   bench/cross-device.sh OUTDIR [fp32|bf16]
# fp32 (tiny.yaml's): the same perplexity on both devices to 1e-5 relative. bf16: the GPU stores
# activations and logits in bf16 and the CPU computes in fp32, so to bf16's 1e-2.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1 prec=${2:-fp32} tol=1e-5
[ "$prec" = bf16 ] && tol=1e-2
mkdir -p "$out"
. bench/gpu-env.sh
tt_local_spec specs/tiny.yaml specs/tiny-cross.yaml -e "s/eval_interval: 100/eval_interval: 0/" \
    -e "s/precision: fp32/precision: $prec/"
status=0
for dev in cuda cpu; do
    rm -rf "/tmp/ck-cross-$dev"
    build-gpu/tt-train specs/tiny-cross.yaml --device $dev --checkpoint-dir "/tmp/ck-cross-$dev" -q \
        2>&1 | tee -a "$out/cross-device.log"
done
for trained in cuda cpu; do
    a=$(build-gpu/tt-eval specs/tiny-cross.yaml --checkpoint "/tmp/ck-cross-$trained" --device cuda --split test --json)
    b=$(build-gpu/tt-eval specs/tiny-cross.yaml --checkpoint "/tmp/ck-cross-$trained" --device cpu --split test --json)
    echo "trained on $trained: gpu $a" | tee -a "$out/cross-device.log"
    echo "trained on $trained: cpu $b" | tee -a "$out/cross-device.log"
    pa=$(echo "$a" | sed 's/.*"perplexity":\([0-9.]*\).*/\1/')
    pb=$(echo "$b" | sed 's/.*"perplexity":\([0-9.]*\).*/\1/')
    awk -v a="$pa" -v b="$pb" -v t="$trained" -v tol="$tol" -v p="$prec" 'BEGIN { r = (a - b) / b; if (r < 0) r = -r;
        printf "%s, trained on %s: test ppl gpu %s cpu %s, relative difference %.2e (tol %s) %s\n", p,
        t, a, b, r, tol, (r <= tol ? "ok" : "FAIL"); exit (r <= tol ? 0 : 1) }' | tee -a "$out/cross-device.log" || status=1
done
rm -f specs/tiny-cross.yaml
exit $status
