#!/usr/bin/env bash
# s17 call 10: s17-lnsmem (the LayerNorm backward's sums in shared memory) against main: checkpoints
# (ptb 150, wt103 60, txl 30, lm1b body 30), GPU tests, goals alternating
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
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_local_spec specs/ptb.yaml specs/id-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 150/"
tt_wt103_spec specs/id-wt103.yaml 60
tt_txl_wt103_spec specs/id-txl.yaml 30
tt_lm1b_body_spec specs/id-lm1b.yaml 30
for s in ptb wt103 txl lm1b; do
  cp specs/id-$s.yaml ../old/specs/
  for t in old src; do
    d=$([ $t = src ] && echo . || echo ../old)
    rm -rf /tmp/ck-$t; (cd $d && timeout 90 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  n=0; bad=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g || { bad=$((bad+1)); echo "id $s ${f#/tmp/ck-old/} DIFFERS"; }; done; echo "id $s: $n files compared, $bad differ ($(el) s)"
  grep -h "valid ppl" $L/id-$s-old.log $L/id-$s-src.log | cut -c1-60
done
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|OVER" $L/model.log | head -5; tail -1 $L/model.log
for c in wt103 lm1b odd; do TT_TEST_CONFIGS=$c timeout 100 build-gpu/tests/test_gpu_kernels >> $L/kernels.log 2>&1; echo "test_gpu_kernels ($c) rc $? ($(el) s)"; done; grep -E "FAIL|residual_ln_bwd" $L/kernels.log | head -8; tail -1 $L/kernels.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
BASE=../old/build-gpu REPS=2 SPECS="lm1b-body wt103 txl-wt103-base" timeout 300 bench/goals-check.sh $L/goals > $L/goals.txt 2>&1; echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-100
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
