#!/usr/bin/env bash
# The libFuzzer targets (fuzz/): builds them with clang, AddressSanitizer and UBSan in
# build-fuzz/ (TT_FUZZ_BUILD), makes their seed corpora, and runs each for SECONDS (default 60):
#   scripts/fuzz.sh [SECONDS] [TARGET...]        TARGET: spec safetensors corpus tuning sweep_csv
#                                                (default all)
#   TT_FUZZ_RUNS=N scripts/fuzz.sh 0 ...          N executions each instead of a time
# Seeds: specs/ and tests/specs-invalid/ (spec); tests/data's reference file and a real checkpoint
# of a tiny model trained one step on the CPU (safetensors); small texts, plain and gzip, and
# PTB's validation text's first lines where ../shared/data has it (corpus); a tuning.tsv line
# (tuning); the sweep's CSVs of bench/raw's issue-21 run (sweep_csv). What a run adds is kept in
# build-fuzz/fuzz-corpus/TARGET for the next. Exits non-zero on any finding (its input is
# written to build-fuzz/fuzz-findings/); prints each target's executions.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-spec safetensors corpus tuning sweep_csv}
B=${TT_FUZZ_BUILD:-build-fuzz}
jobs=$(nproc 2>/dev/null || echo 2)
command -v clang >/dev/null || { echo "fuzz.sh: needs clang (libFuzzer)" >&2; exit 1; }
CC=clang cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_FUZZ=ON -DTT_BUILD_TESTS=OFF \
    -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-/usr/local/cuda}" >/dev/null
cmake --build "$B" -j"$jobs" --target fuzz_spec fuzz_safetensors fuzz_corpus fuzz_tuning fuzz_sweep_csv tt-train \
    >/dev/null
B=$(cd "$B" && pwd)
seeds=$B/fuzz-seeds work=$B/fuzz-corpus findings=$B/fuzz-findings
rm -rf "$seeds"
mkdir -p "$seeds"/{spec,safetensors,corpus,tuning,sweep_csv} "$findings"
cp specs/*.yaml tests/specs-invalid/*.yaml "$seeds/spec/"
cp tests/data/*.safetensors "$seeds/safetensors/"
printf 'a b c\nd e a\n' > "$seeds/corpus/small.txt"
printf 'one\n\n  two  three\t\nfour' > "$seeds/corpus/spaces.txt"
ptb=../shared/data/ptb/ptb.valid.txt
[ -f "$ptb" ] && head -c 4000 "$ptb" > "$seeds/corpus/ptb-head.txt"
gzip -c "$seeds/corpus/small.txt" > "$seeds/corpus/small.txt.gz"
printf 'NVIDIA H200\tsig\tG=2\tG=4\t0.5\t0.9\ttt_mla_fwd\t2026-11-26\n# a comment\n' \
    > "$seeds/tuning/tuning.tsv"
for f in bench/raw/2026-11-28-s21/call4/sweep/ptb/*.csv; do cp "$f" "$seeds/sweep_csv/"; done
# a real checkpoint: a tiny model, one step on the CPU
tiny=$B/fuzz-tiny
rm -rf "$tiny" && mkdir -p "$tiny"
for i in $(seq 1 60); do echo "w$((i % 7)) w$((i % 11)) w$((i % 3)) w$((i % 5))"; done > "$tiny/train.txt"
cat > "$tiny/tiny.yaml" <<EOS
model: {kind: tensorized, vocab: data, d_model: 8, layers: 1, rank: 2, cores: 2, seq_len: 4, d_inner: 8}
train: {batch: 2, steps: 1, precision: fp32, eval_interval: 0}
data: {train: train.txt}
EOS
ASAN_OPTIONS=detect_leaks=0 "$B/tt-train" "$tiny/tiny.yaml" --device cpu --checkpoint-dir "$tiny/ck" \
    --quiet >/dev/null
for f in model optim state; do cp "$tiny"/ck/step-*/$f.safetensors "$seeds/safetensors/tiny-$f.safetensors"; done
status=0
for t in $targets; do
    mkdir -p "$work/$t"
    log=$B/fuzz-$t.log
    limit=(-max_total_time="$secs")
    [ -n "${TT_FUZZ_RUNS:-}" ] && limit=(-runs="$TT_FUZZ_RUNS")
    t0=$(date +%s)
    if "$B/fuzz_$t" "$work/$t" "$seeds/$t" "${limit[@]}" -rss_limit_mb=2048 \
        -artifact_prefix="$findings/$t-" -print_final_stats=1 >"$log" 2>&1; then
        echo "fuzz_$t: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*') executions" \
            "in $(( $(date +%s) - t0 )) s, $(ls "$work/$t" | wc -l) inputs in its corpus, no finding"
    else
        status=1
        echo "fuzz_$t: FINDING (input in $findings/):"
        grep -m3 -E "ERROR|SUMMARY|deadly signal|leak" "$log" || tail -5 "$log"
    fi
done
exit $status
