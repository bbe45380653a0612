#!/usr/bin/env bash
# s27 call 4 (1 GPU): call 3's mla_bwd_q and mla_bwd_wo changes reverted (slower), the output
# layer's own stream reverted (no faster than the side stream); left: mla_fwd on three slabs of
# Wo, against 6fd45cb (.snap/old) built in the same call: mla_fwd under Nsight Compute
# (tt-attn-bench, wt103), the goals alternating (wt103, ptb at batch 120, ptb as shipped), 2 reps.
# (No GPU tests: call 3 passed test_gpu_kernels and test_gpu_model with this mla_fwd, and the
# rest is 6fd45cb's code again.)
#   bash bench/raw/2026-12-03-s27/run4.sh   (repo root, on the GPU machine; carry .deps .data .snap)
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
for b in .snap/old/build-gpu build-gpu; do
  timeout 60 ncu --metrics gpu__time_duration.sum -k regex:'^mla_fwd' -c 8 --csv $b/tt-attn-bench specs/wt103.yaml --iters 1 2>/dev/null |
    python3 -c "import csv,sys; [print('  ncu', r[-1].rjust(10), r[4][:60]) for r in csv.reader(sys.stdin) if len(r) > 10 and r[-3] == 'gpu__time_duration.sum']" | tee $L/ncu-${b%%/*}.txt
done
BASE=.snap/old/build-gpu REPS=2 SPECS="wt103 ptb-b120 ptb" timeout $((560 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-170
head -14 $L/goals/profile-wt103.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
