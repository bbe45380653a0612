#!/usr/bin/env bash
# Session 36, second call: at ptb's shapes the fused attention's kernels run 24 to 48 blocks on
# 132 SMs (mla_fwd G4 TD256: 3 x 8 x 1 blocks; mla_bwd_q 6 x 8). Does `ttgen --tune` find wider
# grids faster in the step? ptb and ptb at batch 120 tuned from an empty tuning cache, the
# variants it chose, then each trained tuned and with TT_TUNE=0 (the heuristics), alternating
# twice; then (time left) run7's fused against materialized. Builds if build-gpu/ is missing.
#   bash bench/raw/2026-12-06-s36/run12.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
[ -x build-gpu/tt-train ] && [ -x build-gpu/ttgen ] || tt_build_gpu || exit 1
export TTGEN_CACHE_DIR=/tmp/ttc12
rm -rf $TTGEN_CACHE_DIR
# the same specs as goals-check.sh's (it writes them again and removes them)
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
tt_local_spec specs/ptb.yaml specs/goal-ptb-b120.yaml -e "s/batch: 32/batch: 120/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
for s in ptb ptb-b120; do
    timeout 120 build-gpu/ttgen specs/goal-$s.yaml --tune > $L/tune-$s.txt 2>&1
    echo "== tune $s rc $? ($(tt_el) s)"
    grep -E "^ *(mla|kernel|variant)" $L/tune-$s.txt | grep -B1 "tuned on" | cut -c1-200 | head -24
done
cp $TTGEN_CACHE_DIR/tuning.tsv $L/ 2>/dev/null
BASE=build-gpu BASE_ENV="TT_TUNE=0" REPS=2 SPECS="ptb ptb-b120" \
    timeout $((380 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "tuned (ours) vs TT_TUNE=0 (base) rc $? ($(tt_el) s)"; grep -E "rep" $L/goals.txt | cut -c1-150
[ $(tt_el) -lt 400 ] && OUT=$OUT/r7 timeout $((560 - $(tt_el))) bash bench/raw/2026-12-06-s35/run7.sh > $L/run7.txt 2>&1
echo "run7 rc $? ($(tt_el) s)"; grep -E "rep|profile" $L/run7.txt | cut -c1-160 | head -14
tt_call_end
