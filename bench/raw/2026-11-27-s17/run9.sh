#!/usr/bin/env bash
# s17 call 9: main at the session's end: test_gpu_kernels (all), tt-bench --profile of wt103 and
# lm1b's body, profile-step.sh wt103 (one step's kernels)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
timeout 160 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/kernels.log | head; tail -1 $L/kernels.log
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/p-wt103.yaml 200
tt_lm1b_body_spec specs/p-lm1b.yaml 200
for w in wt103 lm1b; do
  timeout 60 build-gpu/tt-bench specs/p-$w.yaml --profile > $L/bench-prof-$w.txt 2>&1; echo "tt-bench --profile $w rc $? ($(el) s)"; sed -n 3,13p $L/bench-prof-$w.txt | cut -c1-125; grep -E "as trained|launches" $L/bench-prof-$w.txt | cut -c1-100
done
timeout 120 bench/profile-step.sh $L/prof-wt103 wt103 > /dev/null 2>&1; echo "profile-step wt103 rc $? ($(el) s)"; head -22 $L/prof-wt103/step-breakdown.txt; tail -1 $L/prof-wt103/step-breakdown.txt
gzip -f $L/prof-wt103/ncu-step.csv 2>/dev/null
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
