#!/usr/bin/env bash
# s27 call 3 (1 GPU): mla_bwd_q's dT product one pair ahead on wgmma (two accumulators: pair
# pi + 1's in flight while pair pi's sums run) and mla_bwd_wo's last half-tile product left in
# flight across its tile's end, mla_fwd on three slabs of Wo (its last product of j left in flight
# while j + 1 starts), against 6fd45cb (.snap/old), built in the same call:
# test_gpu_kernels, each mla_ kernel's time under Nsight Compute (tt-attn-bench, wt103),
# tt-attn-bench alternating (wt103, ptb), the goals alternating (wt103, ptb at batch 120); and
# the output layer's gradients now on a stream of their own (joined before the embedding's
# backward, not before each layer's attention) against TT_OUTPUT_SIDE=0 in this build.
#   bash bench/raw/2026-12-03-s27/run3.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "old $(cat .snap/old.txt)"
(cmake -S .snap/old -B .snap/old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null &&
 cmake --build .snap/old/build-gpu -j6 --target tt-train tt-attn-bench) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j10) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
[ -x .snap/old/build-gpu/tt-train ] || { tail -30 $L/build-old.log; exit 1; }
echo "built $(el) s"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|ERROR|NOT CAUGHT" $L/kernels.log | head -8
grep -E "mla_bwd_q|PASSED|FAILED" $L/kernels.log | head -30
timeout 200 build-gpu/tests/test_gpu_model > $L/model.log 2>&1
echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|PASSED" $L/model.log | head -12
for b in .snap/old/build-gpu build-gpu; do
  timeout 60 ncu --metrics gpu__time_duration.sum -k regex:'^mla_' -c 12 --csv $b/tt-attn-bench specs/wt103.yaml --iters 1 2>/dev/null |
    python3 -c "import csv,sys; [print('  ncu', r[-1].rjust(10), r[4][:60]) for r in csv.reader(sys.stdin) if len(r) > 10 and r[-3] == 'gpu__time_duration.sum']" | tee $L/ncu-${b%%/*}.txt
done
for rep in 1 2; do
  for sp in wt103 ptb; do
    for b in .snap/old/build-gpu build-gpu; do
      timeout 60 $b/tt-attn-bench specs/$sp.yaml --iters 50 > $L/attn-$sp-$rep-${b%%/*}.txt 2>&1
      echo "attn $sp rep $rep $b: $(grep -iE 'backward|forward' $L/attn-$sp-$rep-${b%%/*}.txt | tr '\n' ' ' | cut -c1-300)"
    done
  done
done
echo "attn done $(el) s"
BASE=.snap/old/build-gpu REPS=1 SPECS="wt103 ptb-b120" timeout $((500 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
if [ "$(el)" -lt 500 ]; then
    BASE=build-gpu BASE_ENV=TT_OUTPUT_SIDE=0 REPS=1 SPECS="wt103" timeout $((575 - $(el))) \
        bench/goals-check.sh $L/side > $L/side.txt 2>&1
    echo "output stream A/B rc $? ($(el) s)"; grep -E "rep|launches" $L/side.txt | cut -c1-170
fi
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
