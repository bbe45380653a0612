#!/usr/bin/env bash
# s16 call 2: s16-rng (dropout draw a 32-bit hash) against main: every GPU test, the goal specs alternating, profiles
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train tt-bench) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/units.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "FAIL|ERROR|NOT CAUGHT" $L/units.log | head -8; tail -2 $L/units.log
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/repro.log | head; tail -1 $L/repro.log
left=$(( 540 - $(el) ))
BASE=../old/build-gpu REPS=2 SPECS="wt103 lm1b-body txl-wt103-base ptb ptb-b120" timeout $left bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
cat $L/goals.txt; echo "goals $(el) s"
for s in wt103 lm1b-body; do for t in old src; do
  [ $(el) -gt 560 ] && break 2
  d=$([ $t = src ] && echo . || echo ../old)
  [ $s = wt103 ] && tt_wt103_spec $d/specs/p.yaml 600 || tt_lm1b_body_spec $d/specs/p.yaml 200
  (cd $d && timeout 40 build-gpu/tt-bench specs/p.yaml --profile > $L/prof-$s-$t.txt 2>&1); echo "profile $s $t rc $?"
done; done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
