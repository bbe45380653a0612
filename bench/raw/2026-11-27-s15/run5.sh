#!/usr/bin/env bash
# s15 call 5: the goal specs alternating TT_PDL=0 (base) and on (ours), one build of the pdl branch
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(( $(date +%s) - T0 )) s"
BASE=build-gpu BASE_ENV=TT_PDL=0 SPECS="ptb wt103 ptb-b120 txl-wt103-base lm1b-body" timeout $(( 520 - ($(date +%s) - T0) )) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $?"; cat $L/goals/runs.txt; head -3 $L/goals.txt
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/goals/*.log 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
