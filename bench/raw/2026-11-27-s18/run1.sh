#!/usr/bin/env bash
# s17 call 12: s17-review (host refactor: zero_grads' lists, find_written's table, the mat bwd
# unit's outputs, mla.cu's reduce blocks merged) against main: test_gpu_model, the mat units,
# byte-identical checkpoints (wt103 60 steps, lm1b body 30)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_kernels test_gpu_model test_train_cli tt-train tt-eval ttgen) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/id-wt103.yaml 60
tt_lm1b_body_spec specs/id-lm1b.yaml 30
for s in wt103 lm1b; do
  cp specs/id-$s.yaml ../old/specs/
  for t in old src; do
    d=$([ $t = src ] && echo . || echo ../old)
    rm -rf /tmp/ck-$t; (cd $d && timeout 90 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  n=0; bad=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g || { bad=$((bad+1)); echo "id $s ${f#/tmp/ck-old/} DIFFERS"; }; done; echo "id $s: $n files compared, $bad differ ($(el) s)"
done
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|OVER" $L/model.log | head -5; tail -1 $L/model.log
(cd build-gpu && timeout 200 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
TT_TEST_CONFIGS=mat timeout 100 build-gpu/tests/test_gpu_kernels > $L/kernels-mat.log 2>&1; echo "test_gpu_kernels (mat) rc $? ($(el) s)"; grep -E "mla_mat_bwd|FAIL" $L/kernels-mat.log | head -6; tail -1 $L/kernels-mat.log
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
