#!/usr/bin/env bash
# s18 call 4: the dropout offsets (seq0, norm): test_shares, the whole test_gpu_model,
# test_gpu_kernels, and byte-identical checkpoints against main 9638367 (wt103 60, txl 30, lm1b 20)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_kernels test_gpu_model tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
TT_TEST_ONLY=test_shares timeout 120 build-gpu/tests/test_gpu_model > $L/shares.log 2>&1; echo "test_shares rc $? ($(el) s)"; grep -E "segment|FAIL|error" $L/shares.log | head -40
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/id-wt103.yaml 60
tt_txl_wt103_spec specs/id-txl.yaml 30
tt_lm1b_body_spec specs/id-lm1b.yaml 20
for s in wt103 txl lm1b; do
  cp specs/id-$s.yaml ../old/specs/
  for t in old src; do
    d=$([ $t = src ] && echo . || echo ../old)
    rm -rf /tmp/ck-$t; (cd $d && timeout 120 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  n=0; bad=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g || { bad=$((bad+1)); echo "id $s ${f#/tmp/ck-old/} DIFFERS"; }; done; echo "id $s: $n files compared, $bad differ ($(el) s)"
done
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "OVER|FAILED" $L/model.log | head -5; tail -1 $L/model.log
timeout 150 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"; grep -E "FAIL" $L/kernels.log | head -6; tail -1 $L/kernels.log
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
