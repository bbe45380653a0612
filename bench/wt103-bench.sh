#!/usr/bin/env bash
# Issue 4's comparison at the wt103 shapes (specs/wt103.yaml: 6 layers, D 256, N 80, batch 60,
# vocab 267735, adaptive softmax 20000/40000/200000, bf16) in one call on the GPU machine, after
# build-gpu/ is built. WikiText-103 is not here: bench/zipf_corpus.py writes a corpus with Zipf
# word frequencies and exactly that vocabulary. Our trainer's tokens/s and MFU against the PyTorch
# peer's (bench/torch_tt.py, on windows of the same corpus, so that both see the same rows per
# softmax cluster), and a check that both compute the same perplexity from the same weights.
#   bench/wt103-bench.sh OUTDIR
# Environment: TARGET_S (seconds of our timed run, default 45), PEER_MODES (the peer's modes,
# '|' between them; default "--bf16|--compile --bf16|--compile", i.e. eager bf16 autocast,
# torch.compile bf16 autocast, torch.compile tf32), PEER_STEPS (timed peer steps, default 50).
# OUTDIR gets gpu.txt, corpus.txt and each run's log; the table comes last (and in table.txt).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: bench/wt103-bench.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
target=${TARGET_S:-45} peer_steps=${PEER_STEPS:-50} data=$tt_wt103_data
IFS='|' read -r -a modes <<< "${PEER_MODES:---bf16|--compile --bf16|--compile}"
values=267735,256,6,40,2,80,2100,60,0.1,true,0,20000:40000:200000,1,true # V,D,L,R,H,N,F,B,dropout,causal,eps,cutoffs,div_val,tie
tokens_per_step=$((60 * 80))

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
tt_wt103_corpus | tee "$out/corpus.txt"

# 1. Ours for 200 steps: the checkpoint of the check, and the rate that sizes the timed run.
tt_wt103_spec specs/wt103-bench-check.yaml 200
ck=/tmp/ck-wt103-check
rm -rf "$ck"
build-gpu/tt-train specs/wt103-bench-check.yaml --checkpoint-dir "$ck" --log-every 50 \
    > "$out/ours-check-train.log" 2>&1
tail -n 5 "$out/ours-check-train.log"
rate=$(tt_steady_rate "$out/ours-check-train.log")
[ -n "$rate" ] || { echo "wt103-bench: tt-train failed (see $out/ours-check-train.log)"; exit 1; }

# 2. The check: the same weights must give the same perplexity in tt-eval and in the peer, both
# in fp32 (the peer's check runs without autocast or TF32); our bf16 evaluation is printed beside
# it, with how far bf16 activations move the perplexity.
build-gpu/tt-eval specs/wt103-bench-check.yaml --checkpoint "$ck" --split valid 2>&1 |
    tee "$out/ours-eval.log"
sed -e 's/precision: bf16/precision: fp32/' specs/wt103-bench-check.yaml > specs/wt103-bench-check32.yaml
build-gpu/tt-eval specs/wt103-bench-check32.yaml --checkpoint "$ck" --split valid 2>&1 |
    tee "$out/ours-eval-fp32.log"
python3 bench/torch_tt.py check "$values" "$ck/$(cat "$ck/latest")" "$data/valid.txt" 2>&1 |
    tee "$out/peer-check.log"
rm -rf "$ck"

# 3. Ours, timed: about TARGET_S seconds at the rate of the first run.
steps=$(awk -v r="$rate" -v t="$target" -v k="$tokens_per_step" \
    'BEGIN { s = int(r * t / k / 100 + 0.5) * 100; print s < 500 ? 500 : s }')
tt_wt103_spec specs/wt103-bench-time.yaml "$steps"
ck=/tmp/ck-wt103-time
rm -rf "$ck"
build-gpu/tt-train specs/wt103-bench-time.yaml --checkpoint-dir "$ck" --log-every $((steps / 10)) \
    > "$out/ours-train.log" 2>&1
tail -n 6 "$out/ours-train.log"
rm -rf "$ck" specs/wt103-bench-check.yaml specs/wt103-bench-check32.yaml specs/wt103-bench-time.yaml

# 4. The peer at the same shapes, batches of windows of the same training text.
: > "$out/peer-time.log"
for mode in "${modes[@]}"; do
    line=$(python3 bench/torch_tt.py time "$values" $mode --steps "$peer_steps" \
        --corpus "$data/train.txt" 2>&1 | tee -a "$out/peer-time-full.log" | grep '^peer ' | tail -1)
    if [ -z "$line" ] && [[ $mode == *--compile* ]]; then # nonzero inside the graph failed
        line=$(python3 bench/torch_tt.py time "$values" $mode --no-capture --steps "$peer_steps" \
            --corpus "$data/train.txt" 2>&1 | tee -a "$out/peer-time-full.log" | grep '^peer ' | tail -1)
    fi
    echo "${line:-peer $mode: failed (see peer-time-full.log)}" | tee -a "$out/peer-time.log"
done

# 5. One table: tokens/s, MFU at the card's bf16 peak (bf16 rows; tt-train's FLOPs per token),
# memory (ours: the one device allocation; the peer: torch.cuda.max_memory_allocated), ratios.
ours=$(tt_steady_rate "$out/ours-train.log")
{
    echo
    echo "== wt103 shapes on $(tail -1 "$out/gpu.txt" | cut -d, -f1): batch 60 x 80, vocab 267735," \
        "cutoffs 20000/40000/200000, synthetic Zipf corpus; $(grep -o 'train tokens per cluster.*' "$out/corpus.txt")"
    awk -v ours="${ours:-0}" -v steps="$steps" '
        FILENAME ~ /ours-train.log$/ {
            if ($1 == "device" && $2 == "memory:") mem = $3
            if ($1 == "trained") for (i = 2; i <= NF; i++) if ($i ~ /^tok\/s\)/) { wall = $(i - 1); sub(/\(/, "", wall) }
            if ($1 == "MFU") { mfu = $2
                for (i = 2; i <= NF; i++) { if ($i == "TFLOP/s") peak = $(i - 1)
                                            if ($i ~ /FLOP\/token/) flop = $(i - 1) * ($i ~ /^G/ ? 1e9 : 1e6) } }
        }
        FILENAME ~ /peer-time.log$/ { peer[++np] = $0 }
        END {
            printf "%-64s %10s %7s %11s %9s\n", "run", "tokens/s", "MFU", "memory MiB", "ours/run"
            printf "%-64s %10.0f %6.1f%% %11s %8.2fx\n", "ours tt-train bf16, " steps " steps after the first tenth",
                   ours, peak ? 100 * ours * flop / (peak * 1e12) : 0, mem, 1
            printf "%-64s %10.0f %7s %11s %9s\n", "ours, wall clock with the final validation and checkpoint", wall, mfu, mem, "-"
            for (k = 1; k <= np; k++) {
                name = peer[k]; sub(/:.*/, "", name)
                nf = split(peer[k], f, " "); tps = 0; pm = "-"
                for (i = 2; i <= nf; i++) { if (f[i] ~ /^tokens\/s/) tps = f[i - 1]; if (f[i] == "MiB") pm = f[i - 1] }
                if (!tps) { printf "%-64s %10s\n", name, "failed"; continue }
                m = name ~ /bf16/ && peak ? sprintf("%6.1f%%", 100 * tps * flop / (peak * 1e12)) : "-"
                printf "%-64s %10.0f %7s %11s %8.2fx\n", name, tps, m, pm, ours / tps
            }
        }' "$out/ours-train.log" "$out/peer-time.log"
    ppl_bf16=$(awk '/perplexity/ { print $3; exit }' "$out/ours-eval.log")
    ppl_ours=$(awk '/perplexity/ { print $3; exit }' "$out/ours-eval-fp32.log")
    ppl_peer=$(awk '/^peer perplexity/ { print $3; exit }' "$out/peer-check.log")
    verdict=$(awk -v a="$ppl_ours" -v b="$ppl_peer" 'BEGIN {
        if (a == "" || b == "") { print "MISSING"; exit }
        d = (a - b) / a; d = d < 0 ? -d : d
        if (a == b) print "same"
        else printf d < 1e-5 ? "same to %.1e relative (the last digit)\n" : "DIFFERENT (%.1e relative)\n", d }')
    echo "same weights (ours after 200 steps), valid perplexity in fp32: tt-eval ${ppl_ours:-none}," \
        "peer ${ppl_peer:-none}: $verdict"
    awk -v a="$ppl_bf16" -v b="$ppl_ours" 'BEGIN { if (a != "" && b != "")
        printf "  (tt-eval at the spec'"'"'s bf16: %s, %.1e from fp32)\n", a, (a > b ? a - b : b - a) / b }'
} | tee "$out/table.txt"
