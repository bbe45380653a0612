#!/usr/bin/env bash
# Issue 22 on the GPU, as a user would try it: for each shipped spec (and two at fp32), 400 steps
#   A  from a kernel cache with no tuning file at all (it times the products and records them),
#   B  the same again (it reads what A recorded),
#   C  stopped after step 170 (--stop-after) and resumed,
# then the SHA-256 of every file of the final checkpoint and the JSON logs compared: A = B = C
# byte for byte, or the line says which differ. The last validation perplexity and step 400's
# loss go in a table, to compare two cards (the same within the precision's tolerance).
#   bench/repro-check.sh OUTDIR [SPEC...]   (default: ptb txl-ptb wt2 ptb-fp32 txl-ptb-fp32)
# Needs build-gpu (bench/gpu-check.sh's build) and . bench/gpu-env.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/repro-check.sh OUTDIR [SPEC...]}
shift
mkdir -p "$out"
. bench/gpu-env.sh
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(ptb txl-ptb wt2 ptb-fp32 txl-ptb-fp32)
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
table="$out/table.txt"
printf '%-14s %-6s %-22s %-22s %-14s %-14s %s\n' spec prec "two runs (A, B)" \
    "stop 170 + resume (C)" "valid ppl" "step 400 loss" "card" > "$table"
status=0
for name in "${specs[@]}"; do
    base=${name%-fp32}
    prec=bf16
    [ "$name" != "$base" ] && prec=fp32
    spec=specs/repro-$name.yaml
    tt_local_spec "specs/$base.yaml" "$spec" -e "s/^  steps: .*/  steps: 400/" \
        -e "s/^  eval_interval: .*/  eval_interval: 100/" \
        -e "s/^\(  checkpoint: .*interval: \)[0-9]*}/\1100}/" -e "s/^  precision: .*/  precision: $prec/"
    grep -q "^  steps: 400$" "$spec" && grep -q "interval: 100}$" "$spec" ||
        { echo "$spec: the edits did not apply"; exit 1; }
    cache=$out/cache-$name
    rm -rf "$cache" "$out/$name"
    mkdir -p "$out/$name"
    run() { # run NAME ARGS...: tt-train on the spec with its own checkpoint folder and log
        local r=$1
        shift
        TTGEN_CACHE_DIR=$cache build-gpu/tt-train "$spec" --device cuda --checkpoint-dir \
            "$out/$name/ckpt-$r" --log-json "$out/$name/$r.json" --log-every 100 "$@" \
            >> "$out/$name/$r.log" 2>&1
    }
    run A || status=1
    grep -c $'\tgemm cublasLt ' "$cache"/*/tuning.tsv "$cache"/tuning.tsv 2>/dev/null |
        sed "s/^/$name: products recorded by A: /" | tee -a "$out/$name/A.log"
    run B || status=1
    run C --stop-after 170 || status=1
    run C --resume || status=1
    sums() { (cd "$out/$name/ckpt-$1/step-00000400" && sha256sum *) ; sha256sum < "$out/$name/$1.json"; }
    for r in A B C; do sums $r > "$out/$name/$r.sha256" 2>&1; done
    same() { cmp -s "$out/$name/A.sha256" "$out/$name/$1.sha256" && echo identical || echo DIFFER; }
    ab=$(same B)
    ac=$(same C)
    [ "$ab" = identical ] && [ "$ac" = identical ] || status=1
    ppl=$(grep -o 'valid ppl [0-9.]*' "$out/$name/A.log" | tail -1 | awk '{print $3}')
    loss=$(grep '"step":400,' "$out/$name/A.json" | grep -o '"loss":[^,]*' | cut -d: -f2)
    printf '%-14s %-6s %-22s %-22s %-14s %-14s %s\n' "$base" "$prec" "$ab" "$ac" "$ppl" "$loss" \
        "$card" >> "$table"
    rm -rf "$out/$name"/ckpt-* "$cache"
    rm -f "$spec"
done
cat "$table"
exit $status
