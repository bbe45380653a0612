#!/usr/bin/env bash
# s37 call 2 (1 GPU): three builds alternating, to split run16's finding (s36-all with the fold
# slower than main by 1-7%): main (.snap/main), s36-all (.snap/s36) and this tree (s37-fold:
# s36-all and the fold, its loads four deep). Every GPU unit on this tree first, then wt103 and
# ptb, three reps, late tok/s (gpu-env.sh's tt_late_rate).
#   bash bench/raw/2026-12-07-s37/run17.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
(cmake -S .snap/s36 -B build-s36 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-s36 -j5 --target tt-train) > $L/build-s36.log 2>&1 &
b1=$!
(cmake -S .snap/main -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-main -j5 --target tt-train) > $L/build-main.log 2>&1 &
b2=$!
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels rc $krc ($(tt_el) s)"; grep -E "mla_bwd .*bf16|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -12
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR|strategy|rounds" $L/model.log | tail -6
wait $b1 $b2; echo "built $(tt_el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/goal-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
for rep in 1 2 3; do
    for s in wt103 ptb; do
        for b in main s36 gpu; do
            [ $(tt_el) -gt ${RUN_DEADLINE:-540} ] && break 3
            log=$L/$s-$b-$rep.log
            rm -rf /tmp/ck; timeout 120 build-$b/tt-train specs/goal-$s.yaml --checkpoint-dir /tmp/ck --log-every 20 > $log 2>&1
            echo "$s $b rep $rep: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | cut -c1-40)"
        done
    done
done | tee $L/runs.txt
rm -f specs/goal-*.yaml
tt_call_end
