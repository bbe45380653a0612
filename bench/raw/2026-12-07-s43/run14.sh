#!/usr/bin/env bash
# For the session after the forty-third (1 GPU), on main (mla_mat_t and DT_MEM landed at
# 122ee52): the grid's twelve materialized points against the compiled PyTorch peer, whose plans
# changed (T by mla_mat_t at bf16; without position: key, dT read by mla_bwd_q), in two calls:
#   bash bench/raw/2026-12-07-s43/run14.sh 1   the eight d1024 points (~480 s)
#   bash bench/raw/2026-12-07-s43/run14.sh 2   the three d512 points, d256-n80-r40-c2-key, then
#                                              s43-tails (.snap/tails) against main on the wt103
#                                              shapes, four reps each, and those shapes with the
#                                              attention materialized (two reps)
# (repo root, on the GPU machine; carry .deps .data, and .snap/tails for 2: `git archive
# s43-tails` into it). Merge the two tables with the forty-first session's other ten points:
#   bench/grid-bench.sh --merge OUT bench/raw/2026-12-07-s41/call{3,4,5}/logs/grid <these>
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
if [ "${1:-1}" = 1 ]; then
    points=('d1024-*')
else
    points=('d512-*' d256-n80-r40-c2-key)
    (cmake -S .snap/tails -B build-tails -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
        cmake --build build-tails -j6 --target tt-train) > "$L/build-tails.log" 2>&1 &
    bt=$!
fi
budget=$([ "${1:-1}" = 1 ] && echo 565 || echo 330)
GRID_BUDGET_S=$((budget - $(tt_el))) timeout $((budget + 15 - $(tt_el))) \
    bench/grid-bench.sh $L/grid "${points[@]}" > $L/grid.txt 2>&1
echo "grid ${points[*]} rc $? ($(tt_el) s)"; tail -16 $L/grid.txt
if [ "${1:-1}" = 2 ]; then
    wait $bt || { tail -20 $L/build-tails.log; exit 1; }
    [ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
    tt_wt103_spec specs/t-wt103.yaml 600
    # the wt103 shapes with the attention materialized (T by mla_mat_t, dT read by mla_bwd_q),
    # which the cost model estimates at 0.327 ms a layer against the fused 0.16
    (cat specs/t-wt103.yaml; printf 'kernels:\n  attention: materialized\n') > specs/t-wt103mat.yaml
    one() { # LABEL BUILD SPEC REP
        rm -rf /tmp/ck-t
        timeout 60 build-$2/tt-train specs/t-$3.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $L/$3-$1-$4.log 2>&1
        echo "$3 $1 rep $4: rc $? late $(tt_late_rate $L/$3-$1-$4.log) tok/s; $(grep 'valid ppl' $L/$3-$1-$4.log | tail -1 | grep -o 'valid ppl [0-9.]*') ($(tt_el) s)"
    }
    for rep in 1 2 3 4; do
        one main gpu wt103 $rep
        one tails tails wt103 $rep
        [ $rep -le 2 ] && one mat gpu wt103mat $rep
    done | tee $L/ab.txt
    tt_medians $L/ab.txt
    rm -f specs/t-*.yaml
fi
tt_call_end
