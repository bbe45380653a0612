#!/usr/bin/env bash
# s16 call 5: main (8b99c2c) under Nsight Compute: every kernel of 4 ptb.yaml steps and of 4 wt103
# steps (bench/profile-step.sh), to set the kernels' own time beside the step's
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
for w in ptb wt103; do
  timeout 200 bench/profile-step.sh $L/prof-$w $w > /dev/null 2>&1; echo "profile-step $w rc $? ($(el) s)"
  tail -1 $L/prof-$w/step-breakdown.txt
  gzip -f $L/prof-$w/ncu-step.csv
done
tt_local_spec specs/ptb.yaml specs/p-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 150/"
timeout 60 build-gpu/tt-bench specs/p-ptb.yaml --profile > $L/bench-prof-ptb.txt 2>&1; grep -E "^launches|as trained" $L/bench-prof-ptb.txt | cut -c1-100
echo "total $(el) s"
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
