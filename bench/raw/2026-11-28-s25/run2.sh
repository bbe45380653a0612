#!/usr/bin/env bash
# s25 call 2 (1 GPU): s24-copy-rows alone (refresh_padded in one launch) against main 614a686:
# test_gpu_kernels -R copy, goals alternating (wt103, ptb-b120, 3 reps); each kernel of a step
# (bench/profile-step.sh) of ptb-b120 and lm1b-body on main
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build ../old/build-gpu -j6 --target tt-train ttgen) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j10) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
[ -x ../old/build-gpu/tt-train ] || { tail -30 $L/build-old.log; exit 1; }
echo "built $(el) s"
(cd build-gpu && timeout 200 ctest -R test_gpu_kernels --output-on-failure) > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAILED|ERROR" $L/kernels.log | head -5; grep -E "copy_rows" $L/kernels.log | head -4
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; tail -1 $L/model.log
BASE=../old/build-gpu REPS=3 SPECS="wt103 ptb-b120" timeout 200 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-120
cd ../old
for w in ptb-b120 lm1b-body; do
  timeout 120 bench/profile-step.sh $L/prof-$w $w > /dev/null 2>&1; echo "profile $w rc $? ($(el) s)"; head -30 $L/prof-$w/step-breakdown.txt
  rm -f $L/prof-$w/ncu-step.csv
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
