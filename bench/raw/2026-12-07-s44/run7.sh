#!/usr/bin/env bash
# For the next session's first call (1 GPU), on main: (1) ptb.yaml and at batch 120, the
# plan's fused attention against `attention: materialized` (what call 3 meant to run), and (2)
# the cost-model branch (`raw/2026-12-07-s44/s44-costmodel.diff`, which gives d512-n160 4
# tiles) against main at d512-n160, alternating, two reps. Before the call, here:
#   rm -rf .snap/cm && mkdir -p .snap/cm && git archive HEAD -- . ':!bench/raw' ':!docs' | tar -x -C .snap/cm &&
#       (cd .snap/cm && patch -p1 < ../../bench/raw/2026-12-07-s44/s44-costmodel.diff)
#   bash bench/raw/2026-12-07-s44/run7.sh   (repo root, on the GPU machine; carry .deps .data .snap/cm)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/cm -B build-cm -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-cm -j6 --target tt-train ttgen) > $L/build-cm.log 2>&1 &
bc=$!
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j10 --target tt-train ttgen) \
    > $L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
wait $bc || { tail -20 $L/build-cm.log; exit 1; }
echo "built $(tt_el) s"
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
for s in ptb ptb120; do
    sed -e 's/^  arch: auto$/  arch: auto\n  attention: materialized/' specs/t-$s.yaml > specs/t-${s}mat.yaml
    grep -q 'attention: materialized' specs/t-${s}mat.yaml || { echo "the edit of $s did not apply"; exit 1; }
done
bench/grid-bench.sh --specs /tmp/gs d512-n160-r40-c2 > /dev/null
tt_local_spec /tmp/gs/grid-d512-n160-r40-c2.yaml specs/t-d512n160.yaml
build-cm/ttgen specs/t-d512n160.yaml 2>&1 | grep -m1 'tiles of positions' | tee $L/cm-tiles.txt
for rep in 1 2 3; do
    for s in ptb ptb120; do
        tt_train_one fused $s $rep
        tt_train_one mat ${s}mat $rep
    done
    if [ $rep -le 2 ]; then
        tt_train_one main d512n160 $rep
        tt_train_build=build-cm tt_train_one cm d512n160 $rep
    fi
done | tee $L/ab.txt
tt_medians $L/ab.txt
rm -f specs/t-*.yaml
tt_call_end
