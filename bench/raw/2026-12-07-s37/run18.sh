#!/usr/bin/env bash
# s37 call 2 (1 GPU), run17's work reordered for a short call: three builds alternating first
# (main from .snap/main, s36-all from .snap/s36, and this tree, s37-fold: s36-all, the fold with
# its loads four deep and the strategy's every-round rule), wt103 and ptb, late tok/s, until
# RUN_DEADLINE - 170 s; then every GPU unit and test_gpu_model on this tree with what is left.
# TESTS_S=0: no tests, the runs to the deadline.
#   RUN_DEADLINE=S bash bench/raw/2026-12-07-s37/run18.sh   (carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
dl=${RUN_DEADLINE:-540}
for s in s36 main; do
    (cmake -S .snap/$s -B build-$s -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-$s -j5 --target tt-train) > $L/build-$s.log 2>&1 &
done
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j6) > $L/build.log 2>&1 || { tail $L/build.log; exit 1; }
wait; echo "built $(tt_el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/goal-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
for rep in 1 2 3; do
    for s in ptb wt103; do
        for b in main s36 gpu; do
            [ $(tt_el) -gt $((dl - ${TESTS_S:-170})) ] && break 3
            log=$L/$s-$b-$rep.log
            rm -rf /tmp/ck; timeout 120 build-$b/tt-train specs/goal-$s.yaml --checkpoint-dir /tmp/ck --log-every 20 > $log 2>&1
            echo "$s $b rep $rep: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | cut -c1-40)"
        done
    done
done | tee $L/runs.txt
rm -f specs/goal-*.yaml
[ "${TESTS_S:-170}" -gt 60 ] && timeout $((dl - 35 - $(tt_el))) build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels rc $krc ($(tt_el) s)"; grep -E "mla_bwd .*bf16|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -12
[ "${TESTS_S:-170}" -gt 60 ] && timeout $((dl + 30 - $(tt_el))) env TT_TEST_ONLY=test_strategy_tuned build-gpu/tests/test_gpu_model > $L/model.log 2>&1
echo "test_gpu_model (strategy) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|rounds" $L/model.log | tail -4
tt_call_end
