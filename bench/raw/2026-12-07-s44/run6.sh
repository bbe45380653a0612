#!/usr/bin/env bash
# The forty-fourth session's last call (1 GPU), on main: ptb.yaml (B 32, N 32) and at batch 120,
# each with the plan's fused attention and with `attention: materialized` (T of 32^3 a sequence:
# a few MB), alternating, three reps: call 3's ptb runs did not start (a second kernels section).
#   bash bench/raw/2026-12-07-s44/run6.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train) \
    > $L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
echo "built $(tt_el) s"
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
for s in ptb ptb120; do
    sed -e 's/^  arch: auto$/  arch: auto\n  attention: materialized/' specs/t-$s.yaml > specs/t-${s}mat.yaml
    grep -q 'attention: materialized' specs/t-${s}mat.yaml || { echo "the edit of $s did not apply"; exit 1; }
done
one() { # LABEL SPEC REP
    local log=$L/$2-$1-$3.log
    rm -rf /tmp/ck-t
    timeout 60 build-gpu/tt-train specs/t-$2.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $log 2>&1
    echo "$2 $1 rep $3: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*'); $(grep -o 'device memory: [0-9.]* MiB' $log) ($(tt_el) s)"
}
for rep in 1 2 3; do
    for s in ptb ptb120; do
        one fused $s $rep
        one mat ${s}mat $rep
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
rm -f specs/t-*.yaml
tt_call_end
