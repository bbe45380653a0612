#!/usr/bin/env bash
# For the next session (1 GPU), branch s35-adam-pad: Adam writes the padded copies of the
# weights itself (no copy_rows launch after it; TT_ADAM_PADS=0 restores the launch in the same
# build). Every GPU unit (adam's now checks six padded copies byte for byte, the padding
# untouched), test_gpu_model, a ptb run both ways with the final checkpoints compared byte for
# byte, then ptb, ptb-b120 and wt103 alternating with TT_ADAM_PADS=0.
#   bash bench/raw/2026-12-06-s35/run8.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(tt_el) s)"
grep -E "adam|copy_rows|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -16
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(tt_el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -4
tt_local_spec specs/ptb.yaml specs/s35-ptb-same.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 300/" -e "s/^\(  checkpoint: .*interval: \)[0-9]*}/\1300}/"
for e in 0 1; do
  rm -rf /tmp/ck8-$e
  TT_ADAM_PADS=$e timeout 90 build-gpu/tt-train specs/s35-ptb-same.yaml --checkpoint-dir /tmp/ck8-$e -q > $L/same-$e.log 2>&1
  echo "ptb 300 steps TT_ADAM_PADS=$e rc $?"
done
for e in 0 1; do (cd /tmp/ck8-$e/step-00000300 && sha256sum *) > $L/same-$e.sha 2>&1; done
cmp -s $L/same-0.sha $L/same-1.sha && echo "checkpoints identical ($(wc -l < $L/same-0.sha) files)" || { echo "CHECKPOINTS DIFFER"; diff $L/same-0.sha $L/same-1.sha | head; }
rm -f specs/s35-ptb-same.yaml
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_ADAM_PADS=0 REPS=2 SPECS="ptb ptb-b120 wt103" \
    timeout $((560 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_ADAM_PADS=0 rc $? ($(tt_el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150 | head -14
tt_call_end
