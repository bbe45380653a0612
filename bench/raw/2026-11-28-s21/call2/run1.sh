#!/usr/bin/env bash
# s21 (1 x H100, calls in a row on one warm machine): issue 21's table, bench/paper-sweep.sh,
# resumed each call from the last call's files (carried in .snap/sweep-in when the machine is
# fresh), 560 s a call.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
B=/tmp/tt-bs
if [ ! -x $B/tt-bench ]; then
    (cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTT_BUILD_TESTS=OFF -DTT_COMMIT=$(cat ../commit.txt) &&
     cmake --build $B -j16 --target tt-bench) > $L/build.log 2>&1
    [ -x $B/tt-bench ] || { tail -20 $L/build.log; exit 1; }
    echo "built $(el) s"
fi
SW=/tmp/sw
if [ ! -d $SW ]; then
    mkdir -p $SW
    [ -d ../sweep-in ] && cp -r ../sweep-in/. $SW/
    echo "fresh machine: state from the carried files: $(ls $SW)"
fi
LEFT=$(( ${BUDGET:-575} - $(el) ))
TT_BENCH=$B/tt-bench timeout $LEFT bench/paper-sweep.sh $SW > $L/sweep-$T0.log 2>&1
echo "sweep rc $? ($(el) s)"
grep -c . $SW/*/sweep.csv
tail -4 $L/sweep-$T0.log
cp -r $SW $OUT/sweep
gzip -f $L/*.log
echo "total $(el) s"
