#!/usr/bin/env bash
# Kernel autotuning on the GPU machine (issue 6): `ttgen --tune` on each spec, from an empty
# tuning cache, then the attention alone (tt-attn-bench) with the plan's heuristics (TT_TUNE=0)
# and with the tuned variants, alternating twice, in the same call on the same card. The fp32
# path (templates/mla.cu's tunables) is tuned on PTB's shapes at fp32.
#   bench/tune-bench.sh OUTDIR [SPEC...]   (default specs/wt103.yaml specs/ptb.yaml, PTB at fp32,
#                                           specs/txl-wt103-base.yaml: its LayerNorms and Adam)
# OUTDIR gets gpu.txt, build.log, and per spec tune-NAME.txt (ttgen --tune's tables and report)
# and attn-NAME.txt (the four timings); tuning.tsv is the tuning cache it left.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/tune-bench.sh OUTDIR [SPEC...]}
shift
mkdir -p "$out"
. bench/gpu-env.sh
specs=("$@")
if [ ${#specs[@]} = 0 ]; then
    tt_local_spec specs/ptb.yaml specs/check-tune-ptb-fp32.yaml -e "s/precision: bf16/precision: fp32/"
    specs=(specs/wt103.yaml specs/ptb.yaml specs/check-tune-ptb-fp32.yaml specs/txl-wt103-base.yaml)
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
if ! { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
       cmake --build build-gpu -j16 --target ttgen tt-attn-bench; } > "$out/build.log" 2>&1; then
    tail -n 40 "$out/build.log"
    echo "tune-bench: the build failed (see $out/build.log)"
    exit 1
fi
rm -f "$TTGEN_CACHE_DIR"/*/tuning.tsv # tuned from nothing, in this call
rc=0
for spec in "${specs[@]}"; do
    name=$(basename "$spec" .yaml)
    echo "== $spec"
    t0=$(date +%s.%N)
    build-gpu/ttgen "$spec" --tune 2>&1 | tee "$out/tune-$name.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    awk "BEGIN { printf \"ttgen --tune took %.1f s\n\", $(date +%s.%N) - $t0 }" | tee -a "$out/tune-$name.txt"
    grep -q "kind: tensorized" "$spec" || continue # tt-attn-bench: the tensorized attention only
    for round in 1 2; do
        for tune in 0 1; do
            echo "-- round $round, TT_TUNE=$tune"
            TT_TUNE=$tune build-gpu/tt-attn-bench "$spec" --iters 100 || rc=1
        done
    done 2>&1 | tee "$out/attn-$name.txt"
done
cp "$TTGEN_CACHE_DIR"/*/tuning.tsv "$out/" 2>/dev/null
rm -f specs/check-tune-ptb-fp32.yaml
echo
echo "== tuned against the heuristics, the attention alone (tt-attn-bench, median of 100)"
for spec in "${specs[@]}"; do
    name=$(basename "$spec" .yaml)
    grep -h "chosen:" "$out/tune-$name.txt" | sed "s|^|  $name |"
    grep -h -E "^-- round|forward|backward" "$out/attn-$name.txt" 2>/dev/null | grep -v "only; the\|instead of beside" | sed "s|^|  $name |" | head -16
done
exit $rc
