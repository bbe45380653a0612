#!/usr/bin/env bash
# Issue 17's goal figures in one call on the GPU machine (after build-gpu/ is built): our steady
# training tokens/s and MFU at the wt103 shapes (bench/zipf_corpus.py's corpus), ptb.yaml at
# batch 120 and as shipped, txl-wt103-base (the same corpus) and lm1b.yaml's body (D 1024, 8
# layers, PTB's vocabulary and full softmax), and the launches of a wt103 step; no peers (their
# figures are bench/wt103-bench.sh's, txl-bench.sh's and grid-bench.sh's). With BASE=DIR (a
# build folder of another commit, e.g. ../old/build-gpu), every run alternates with that build's,
# REPS times (default 1; 2 with BASE), and the table has both; BASE_ENV (e.g. TT_PDL=0) is set
# for the base's runs only, so BASE=build-gpu BASE_ENV=... compares one build under two settings;
# SPECS (a list of the names below) runs only some of them.
#   bench/goals-check.sh OUTDIR
# The rate: gpu-env.sh's tt_late_rate, the median of the last five progress windows (the first
# windows hold the products' timing and graph captures, and a capture of new cluster sizes can
# land in any window: the median leaves it out). MFU: that rate x tt-train's training FLOPs per
# token over the card's dense bf16 peak, both from tt-train's MFU line.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: bench/goals-check.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
base=${BASE:-} reps=${REPS:-$([ -n "${BASE:-}" ] && echo 2 || echo 1)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > "$out/corpus.txt"

# SPECS="txl-wt103-base wt103" runs only those (names as below)
read -r -a specs <<< "${SPECS:-wt103 ptb-b120 ptb txl-wt103-base lm1b-body}"
tt_wt103_spec specs/goal-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/goal-ptb-b120.yaml -e "s/batch: 32/batch: 120/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1200/"
tt_txl_wt103_spec specs/goal-txl-wt103-base.yaml 160
tt_lm1b_body_spec specs/goal-lm1b-body.yaml 200

run() { # build name rep label [VAR=value...]: one tt-train run of that build, its log in OUTDIR
    local build=$1 name=$2 rep=$3 label=$4 log="$out/$2-$4-$3.log"
    shift 4
    rm -rf /tmp/ck-goal
    env "$@" timeout 300 "$build/tt-train" "specs/goal-$name.yaml" --checkpoint-dir /tmp/ck-goal --log-every 20 > "$log" 2>&1
    local rc=$? rate
    rate=$(tt_late_rate "$log")
    echo "$name $label rep $rep: rc $rc late $rate tok/s, MFU $(tt_mfu "$rate" "$log"); $(grep 'valid ppl' "$log" | tail -1)"
}
for rep in $(seq "$reps"); do
    for name in "${specs[@]}"; do
        [ -n "$base" ] && run "$base" "$name" "$rep" base ${BASE_ENV:-}
        run build-gpu "$name" "$rep" ours
    done
done | tee "$out/runs.txt"
build-gpu/tt-bench specs/goal-wt103.yaml --profile > "$out/profile-wt103.txt" 2>&1
grep '^launches' "$out/profile-wt103.txt" | tee -a "$out/runs.txt"
rm -f specs/goal-*.yaml
