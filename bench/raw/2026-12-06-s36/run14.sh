#!/usr/bin/env bash
# For the next session's first call (1 GPU), branch s36-all: s36-fwd-td (mla_fwd's wider grid at
# small shapes) and s36-strategy-tune (`ttgen --tune` times whole training steps of the fused and
# the materialized attention), against main built beside it (.snap/main: `git archive main`).
# The units on ptb's configs and specs, test_gpu_model, ptb and ptb-b120 alternating with main
# (the heuristics, no tuning), then `ttgen --tune` on ptb and lm1b's body from an empty tuning
# cache (their strategy lines), and ptb tuned against TT_TUNE=0.
#   bash bench/raw/2026-12-06-s36/run14.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
build-gpu/ttgen specs/ptb.yaml | grep -A1 "^  mla_fwd_N"
TT_TEST_CONFIGS=ptb timeout 100 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels (ptb) rc $krc ($(tt_el) s)"; grep -E "mla_fwd.*ptb|FAILED|PASSED|ERROR" $L/kernels.log | head -8
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -3
wait $tt_bm || { echo "main's build failed"; tail -20 $L/build-main.log; }
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-main REPS=3 SPECS="ptb ptb-b120" \
    timeout 150 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs main rc $? ($(tt_el) s)"; grep -E "rep" $L/goals.txt | cut -c1-110
export TTGEN_CACHE_DIR=/tmp/ttc14
rm -rf $TTGEN_CACHE_DIR
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
tt_lm1b_body_spec specs/goal-lm1b-body.yaml 200
for s in ptb lm1b-body; do
    timeout 150 build-gpu/ttgen specs/goal-$s.yaml --tune > $L/tune-$s.txt 2>&1
    echo "== tune $s rc $? ($(tt_el) s)"
    grep -A1 "^attention strategy" $L/tune-$s.txt; grep -m1 "strategy" $L/tune-$s.txt | tail -1
    build-gpu/ttgen specs/goal-$s.yaml | grep -m1 "    strategy"
done
cp $TTGEN_CACHE_DIR/tuning.tsv $L/ 2>/dev/null
[ $(tt_el) -lt 450 ] && BASE=build-gpu BASE_ENV="TT_TUNE=0" REPS=2 SPECS="ptb lm1b-body" \
    timeout $((570 - $(tt_el))) bench/goals-check.sh $L/goals-tuned > $L/goals-tuned.txt 2>&1
echo "tuned (ours) vs TT_TUNE=0 (base) rc $? ($(tt_el) s)"; grep -E "rep" $L/goals-tuned.txt | cut -c1-110
tt_call_end
