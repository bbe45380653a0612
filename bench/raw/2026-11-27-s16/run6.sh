#!/usr/bin/env bash
# s16 call 6: main 884823a (the gradient norm in one launch; mla_bwd_params folded into
# mla_bwd_reduce) against 8b99c2c: every GPU test, byte-identical checkpoints, launches, the goal
# specs alternating
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
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_local_spec specs/ptb.yaml specs/id-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 150/"
tt_wt103_spec specs/id-wt103.yaml 60
tt_txl_wt103_spec specs/id-txl.yaml 30
tt_lm1b_body_spec specs/id-lm1b.yaml 30
for s in ptb wt103 txl lm1b; do
  cp specs/id-$s.yaml ../old/specs/
  for t in old src; do
    d=$([ $t = src ] && echo . || echo ../old)
    rm -rf /tmp/ck-$t; (cd $d && timeout 60 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  n=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g && echo "id $s ${f#/tmp/ck-old/} identical" || echo "id $s ${f#/tmp/ck-old/} DIFFERS"; done; echo "id $s: $n files compared"
done
echo "identical $(el) s"
for s in ptb wt103; do for t in old src; do
  d=$([ $t = src ] && echo . || echo ../old)
  (cd $d && timeout 40 build-gpu/tt-bench specs/id-$s.yaml --profile > $L/prof-$s-$t.txt 2>&1); echo "profile $s $t: $(grep '^launches' $L/prof-$s-$t.txt); $(grep -o 'as trained[^;]*' $L/prof-$s-$t.txt)"
done; done
left=$(( 570 - $(el) ))
BASE=../old/build-gpu REPS=2 SPECS="ptb wt103 ptb-b120 lm1b-body txl-wt103-base" timeout $left bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
cat $L/goals.txt; echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
