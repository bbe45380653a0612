#!/usr/bin/env bash
# s21 call 4 (1 x H100): (1) the table's learning-rate search widened to 2e-3 (Transformer-XL
# chose 1e-3, the top of the first search): bench/paper-sweep.sh resumed from calls 1-2's files,
# so only the new trials (and a family whose chosen rate changes) train; (2) the review's GPU
# clean-ups (tt_gpu_lm_hidden and the memories' copy through one helper, the watchdog naming
# the limit that ran out) under test_gpu_lib and test_gpu_repro.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
B=/tmp/tt-b4
(cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTT_COMMIT=$(cat ../commit.txt) && cmake --build $B -j16 --target tt-bench) > $L/build.log 2>&1
[ -x $B/tt-bench ] || { tail -20 $L/build.log; exit 1; }
echo "built tt-bench $(el) s"
SW=/tmp/sw; mkdir -p $SW; cp -r ../sweep-in/. $SW/
TT_BENCH=$B/tt-bench timeout 270 bench/paper-sweep.sh $SW > $L/sweep.log 2>&1
echo "sweep rc $? ($(el) s)"
grep "lr search\|^\[" $L/sweep.log | grep -v "the last run's" | tail -30
cp -r $SW $OUT/sweep
cmake --build $B -j16 > $L/build-all.log 2>&1; echo "built all rc $? ($(el) s)"
(cd $B && timeout $(( 560 - $(el) )) ctest -R "test_gpu_lib|test_gpu_repro" --output-on-failure) > $L/ctest.log 2>&1
echo "ctest rc $? ($(el) s)"; tail -8 $L/ctest.log
gzip -f $L/*.log
