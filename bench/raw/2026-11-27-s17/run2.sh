#!/usr/bin/env bash
# s17 call 2: s17-mat (T kept a layer, vector prep/mask) against main: GPU tests, lm1b-body
# checkpoints byte-identical, goals-check lm1b-body alternating, tt-bench --profile lm1b both
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
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAIL|ERROR|materialized" $L/model.log | head -12; tail -1 $L/model.log
tt_lm1b_body_spec specs/id-lm1b.yaml 30
cp specs/id-lm1b.yaml ../old/specs/
for t in old src; do
  d=$([ $t = src ] && echo . || echo ../old)
  rm -rf /tmp/ck-$t; (cd $d && timeout 90 build-gpu/tt-train specs/id-lm1b.yaml --checkpoint-dir /tmp/ck-$t > $L/id-lm1b-$t.log 2>&1) || echo "id lm1b $t failed"
done
n=0; bad=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g || { bad=$((bad+1)); echo "id lm1b ${f#/tmp/ck-old/} DIFFERS"; }; done; echo "id lm1b: $n files compared, $bad differ ($(el) s)"
BASE=../old/build-gpu REPS=2 SPECS="lm1b-body" timeout 200 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; tail -8 $L/goals.txt
tt_lm1b_body_spec specs/p-lm1b.yaml 200
cp specs/p-lm1b.yaml ../old/specs/
for t in old src; do
  d=$([ $t = src ] && echo . || echo ../old)
  (cd $d && timeout 60 build-gpu/tt-bench specs/p-lm1b.yaml --profile > $L/bench-prof-lm1b-$t.txt 2>&1); echo "tt-bench --profile lm1b $t rc $? ($(el) s)"; grep -E "^attention|^sum|as trained|launches" $L/bench-prof-lm1b-$t.txt
done
timeout 150 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/kernels.log | head; grep -E "mla_mat" $L/kernels.log | head -8; tail -1 $L/kernels.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
