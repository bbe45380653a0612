#!/usr/bin/env bash
# s16 call 4: s16-defer against main: byte-identical checkpoints (call 3 compared the wrong
# paths), txl-wt103-base's profile and three more alternating runs
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train tt-bench) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
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
    rm -rf /tmp/ck-$t; (cd $d && timeout 60 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  for f in /tmp/ck-old/step-*/*; do g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g && echo "id $s ${f#/tmp/ck-old/} identical" || echo "id $s ${f#/tmp/ck-old/} DIFFERS"; done
done
echo "identical $(el) s"
tt_txl_wt103_spec specs/p-txl.yaml 200000; cp specs/p-txl.yaml ../old/specs/
for t in old src; do
  d=$([ $t = src ] && echo . || echo ../old)
  (cd $d && timeout 60 build-gpu/tt-bench specs/p-txl.yaml --profile > $L/prof-txl-$t.txt 2>&1); echo "profile txl $t: $(grep '^launches' $L/prof-txl-$t.txt); $(grep -o 'as trained[^;]*' $L/prof-txl-$t.txt)"
done
left=$(( 560 - $(el) ))
BASE=../old/build-gpu REPS=3 SPECS="txl-wt103-base" timeout $left bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
cat $L/goals.txt; echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
