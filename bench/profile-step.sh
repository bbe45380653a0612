#!/usr/bin/env bash
# Where a training step's time goes: every kernel of one step of specs/ptb.yaml (as shipped, or at
# batch 120: ptb-b120), specs/wt103.yaml,
# specs/txl-wt103-base.yaml or lm1b.yaml's body (gpu-env.sh's tt_lm1b_body_spec; bf16) under
# Nsight Compute, each kernel alone, its duration summed by kernel name (cuBLAS's included),
# largest first: the last of 4 steps (from the kernel after the third Adam launch to the fourth),
# after a run of 40 steps outside the profiler that records the products' algorithms (the first
# steps on a fresh machine time cuBLAS's candidates, whose kernels would count otherwise; the
# wt103 shapes meet new adaptive cluster sizes for a while). The wt103 shapes train on
# bench/zipf_corpus.py's synthetic corpus (WikiText-103 is not here).
#   bench/profile-step.sh OUTDIR [ptb|ptb-b120|wt103|txl-wt103|lm1b-body]   (on the GPU machine, after build-gpu/ is built)
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1 which=${2:-ptb}
mkdir -p "$out"
. bench/gpu-env.sh
spec=specs/$which-profile.yaml
if [ "$which" = wt103 ]; then
    [ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
    tt_wt103_spec "$spec" 200000
elif [ "$which" = txl-wt103 ]; then
    [ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
    tt_txl_wt103_spec "$spec" 200000
elif [ "$which" = lm1b-body ]; then
    tt_lm1b_body_spec "$spec" 200000
elif [ "$which" = ptb-b120 ]; then
    tt_local_spec specs/ptb.yaml "$spec" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/batch: 32/batch: 120/"
else
    tt_local_spec specs/ptb.yaml "$spec" -e "s/eval_interval: 1000/eval_interval: 0/"
fi
rm -rf /tmp/ck-profile
build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck-profile --stop-after 40 -q > "$out/warm-up.log" 2>&1
rm -rf /tmp/ck-profile
ncu --metrics gpu__time_duration.sum --csv --clock-control none \
    build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck-profile --stop-after 4 -q \
    > "$out/ncu-step.csv" 2> "$out/ncu-step.err"
rm -f "$spec"
python3 - "$out/ncu-step.csv" <<'PY' | tee "$out/step-breakdown.txt"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
name, unit, val = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
ks = [(r[name].split("(")[0][:60], float(r[val].replace(",", "")) * scale[r[unit]]) for r in rows[1:]]
adam = [i for i, (k, _) in enumerate(ks) if k.startswith("adam_")]
if len(adam) < 2:
    sys.exit(f"{len(adam)} Adam launches in the profile: no whole step to show")
step = ks[adam[-2] + 1:adam[-1] + 1]
tot, cnt = collections.Counter(), collections.Counter()
for k, v in step:
    tot[k] += v
    cnt[k] += 1
all_us = sum(tot.values())
print(f"one step (the kernels after Adam launch {len(adam) - 1} up to launch {len(adam)}), each kernel alone")
print(f"{'kernel':60s} {'calls':>6s} {'us':>9s} {'share':>6s}")
for k, v in tot.most_common(25):
    print(f"{k:60s} {cnt[k]:6d} {v:9.1f} {100 * v / all_us:5.1f}%")
print(f"{'all kernels':60s} {len(step):6d} {all_us:9.1f}")
PY
