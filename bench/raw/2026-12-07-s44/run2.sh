#!/usr/bin/env bash
# The forty-fourth session's second call (1 GPU): the wt103 shapes, ptb.yaml and ptb.yaml at
# batch 120, each with the plan's strategy (fused) and with `kernels: attention: materialized`
# (T by mla_mat_t, dT read by mla_bwd_q since 122ee52), alternating, three reps; the wt103 shapes
# materialized with the products with Wo in 3 tiles of positions (attention_tiles: 3; the plan
# runs 1 at these shapes); then tt-bench
# --profile of the wt103 shapes materialized (where a step's time goes with that strategy).
#   bash bench/raw/2026-12-07-s44/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
for s in wt103 ptb ptb120; do
    (cat specs/t-$s.yaml; printf 'kernels:\n  attention: materialized\n') > specs/t-${s}mat.yaml
done
(cat specs/t-wt103mat.yaml; printf '  attention_tiles: 3\n') > specs/t-wt103mat3.yaml
one() { # LABEL SPEC REP [VAR=value]
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    env ${4:-TT_X=1} timeout 80 build-gpu/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*'); $(grep -o 'device memory: [0-9.]* MiB' $log) ($(tt_el) s)"
}
for rep in 1 2 3; do
    for s in wt103 ptb ptb120; do
        one fused $s $rep
        one mat ${s}mat $rep
    done
    if [ $rep -le 2 ]; then
        one tiles3 wt103mat3 $rep
    fi
done | tee $L/ab.txt
tt_medians $L/ab.txt
if [ $(tt_el) -lt 480 ]; then
    timeout $((570 - $(tt_el))) build-gpu/tt-bench specs/t-wt103mat.yaml --profile > $L/profile-wt103mat.txt 2>&1
    echo "profile rc $? ($(tt_el) s)"; head -16 $L/profile-wt103mat.txt
fi
rm -f specs/t-*.yaml
tt_call_end
