#!/usr/bin/env bash
# s28 call 1 (1 GPU): HEAD (a4febd7: c1ee1fa's review edits, mla_fwd on three slabs of Wo) under
# test_gpu_model (its graph test runs TT_OUTPUT_SIDE=0 against the default); then the three
# slabs' effect on whole steps: against 6fd45cb (.snap/old, two slabs) built in the same call,
# mla_fwd under Nsight Compute and the goals alternating (wt103, ptb at batch 120, ptb), 2 reps;
# then every kernel of one wt103 step under Nsight Compute (bench/profile-step.sh).
#   bash bench/raw/2026-12-03-s28/run1.sh   (repo root, on the GPU machine; carry .deps .data .snap)
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
timeout 200 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"
grep -E "FAILED|PASSED|step 6|output on one" $L/model.log | head -20
for b in .snap/old/build-gpu build-gpu; do
  timeout 60 ncu --metrics gpu__time_duration.sum -k regex:'^mla_fwd' -c 8 --csv $b/tt-attn-bench specs/wt103.yaml --iters 1 2>/dev/null |
    python3 -c "import csv,sys; [print('  ncu', r[-1].rjust(10), r[4][:60]) for r in csv.reader(sys.stdin) if len(r) > 10 and r[-3] == 'gpu__time_duration.sum']" | tee $L/ncu-${b%%/*}.txt
done
echo "ncu $(el) s"
BASE=.snap/old/build-gpu REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((440 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
head -14 $L/goals/profile-wt103.txt
timeout $((570 - $(el))) bench/profile-step.sh $L/step wt103 > /dev/null 2>&1; echo "profile-step rc $?"
head -45 $L/step/step-breakdown.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
