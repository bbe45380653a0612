#!/usr/bin/env bash
# s17 call 1: s16-review (5530921) against main (87e88ff): test_gpu_kernels, test_gpu_model,
# test_gpu_repro, byte-identical checkpoints (ptb 150, wt103 60, txl-wt103-base 30, lm1b body 30);
# then profile-step.sh (new warm-up) and tt-bench --profile for wt103 and lm1b-body on the review
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
done
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
(cd build-gpu && timeout 80 ctest -R test_gpu_repro --output-on-failure) > $L/repro.log 2>&1; echo "test_gpu_repro rc $? ($(el) s)"; tail -1 $L/repro.log
timeout 150 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"; grep -E "FAIL|ERROR" $L/kernels.log | head; tail -1 $L/kernels.log
for w in wt103 lm1b-body; do
  timeout 150 bench/profile-step.sh $L/prof-$w $w > /dev/null 2>&1; echo "profile-step $w rc $? ($(el) s)"
  cat $L/prof-$w/step-breakdown.txt | head -30
  gzip -f $L/prof-$w/ncu-step.csv
done
tt_wt103_spec specs/p-wt103.yaml 200
tt_lm1b_body_spec specs/p-lm1b.yaml 200
for w in wt103 lm1b; do
  timeout 60 build-gpu/tt-bench specs/p-$w.yaml --profile > $L/bench-prof-$w.txt 2>&1; echo "tt-bench --profile $w rc $? ($(el) s)"; cat $L/bench-prof-$w.txt | tail -30
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
