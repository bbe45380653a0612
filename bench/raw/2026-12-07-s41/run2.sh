#!/usr/bin/env bash
# Forty-first session, second call (1 GPU), on branch s41-marks: the step profile's parts marked
# by a clock-reading kernel (templates/prof_mark.cu) instead of an event node. test_profile, then
# ptb's and wt103's profiles alternating between main's tt-bench (event nodes; .snap/main, from
# `git archive main`) and this branch's, two reps each: the parts' sum against one stream.
#   bash bench/raw/2026-12-07-s41/run2.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-main -j8 --target tt-bench) > "$L/build-main.log" 2>&1 &
bm=$!
tt_build_gpu || exit 1
tt_gpu_test bench-cli 60 "FAILED|PASSED|ERROR|one stream" test_bench_cli TT_TEST_ONLY=test_profile
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
wait $bm || { tail -20 $L/build-main.log; exit 1; }
echo "main built $(tt_el) s"
for rep in 1 2; do
    for sp in ptb wt103; do
        for b in main gpu; do
            f=$L/profile-$sp-$b-$rep.txt
            timeout 90 build-$b/tt-bench specs/t-$sp.yaml --profile > $f 2>&1
            echo "$sp $b rep $rep rc $?: $(grep -o 'one stream, as profiled.*of one stream.s' $f | cut -c1-200) ($(tt_el) s)"
        done
    done
done
cat $L/profile-ptb-gpu-1.txt $L/profile-wt103-gpu-1.txt
rm -f specs/t-*.yaml
tt_call_end
