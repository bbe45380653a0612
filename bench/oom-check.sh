#!/usr/bin/env bash
# Too little device memory must end in one line saying what the spec needs and what to lower
# (issue 4): specs/ptb.yaml with batch 65536 x seq_len 64 needs about 270 GiB of activations.
# tt-eval meets it first (the trainer first says PTB is too small for such a batch); the device
# memory is planned before the checkpoint is read, so any file stands in for one.
#   bench/oom-check.sh OUTDIR      (on the GPU machine, after build-gpu/ is built)
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1
. bench/gpu-env.sh
tt_local_spec specs/ptb.yaml specs/ptb-oom.yaml -e "s/batch: 32/batch: 65536/" -e "s/seq_len: 32/seq_len: 64/"
build-gpu/tt-eval specs/ptb-oom.yaml --device cuda --checkpoint specs/ptb.yaml > "$out/oom.out" 2> "$out/oom.err"
rc=$?
rm -f specs/ptb-oom.yaml
echo "exit $rc; stderr lines $(wc -l < "$out/oom.err")"
cat "$out/oom.err"
[ "$rc" = 2 ] && [ "$(wc -l < "$out/oom.err")" = 1 ] && grep -q "lower train.batch" "$out/oom.err"
