#!/usr/bin/env bash
# s18 call 8 (2 GPUs): --shard-optimizer: fp32 trajectory against the unsharded 2-GPU run and a
# sharded checkpoint resumed on one GPU; weak scaling with and without it (wt103, txl-wt103-base);
# one GPU's checkpoints byte-identical to main 9638367's (ptb, wt103)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j32 --target tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j32 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(el) s"
T=build-gpu/tt-train
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 120 $T specs/p32.yaml --gpus 2 --checkpoint-dir /tmp/c2 --log-json $L/p2.json --log-every 50 > $L/p2.log 2>&1; echo "p32 2 GPUs rc $? ($(el) s)"
timeout 120 $T specs/p32.yaml --gpus 2 --shard-optimizer --checkpoint-dir /tmp/c2s --log-json $L/p2s.json --log-every 50 > $L/p2s.log 2>&1; echo "p32 2 GPUs sharded rc $? ($(el) s)"; grep "^tt-train" $L/p2s.log
python3 ../cmp.py $L/p2.json $L/p2s.json
timeout 120 $T specs/p32.yaml --gpus 2 --shard-optimizer --stop-after 100 --checkpoint-dir /tmp/cr --log-json $L/pr.json > $L/pr-a.log 2>&1; echo "sharded stop at 100 rc $?"
timeout 120 $T specs/p32.yaml --resume --checkpoint-dir /tmp/cr --log-json $L/pr.json > $L/pr-b.log 2>&1; echo "resumed on 1 GPU rc $?"
python3 ../cmp.py $L/p2s.json $L/pr.json
# one GPU: byte-identical checkpoints against main
tt_local_spec specs/ptb.yaml specs/id-ptb.yaml -e "s/steps: 40000/steps: 100/" -e "s/eval_interval: 1000/eval_interval: 0/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/id-wt103.yaml 40
for s in ptb wt103; do
  cp specs/id-$s.yaml ../old/specs/
  for t in old src; do
    d=$([ $t = src ] && echo . || echo ../old)
    rm -rf /tmp/ck-$t; (cd $d && timeout 120 build-gpu/tt-train specs/id-$s.yaml --checkpoint-dir /tmp/ck-$t > $L/id-$s-$t.log 2>&1) || echo "id $s $t failed"
  done
  n=0; bad=0; for f in /tmp/ck-old/step-*/*; do n=$((n+1)); g=/tmp/ck-src/${f#/tmp/ck-old/}; cmp -s $f $g || { bad=$((bad+1)); echo "id $s ${f#/tmp/ck-old/} DIFFERS"; }; done; echo "id $s: $n files compared, $bad differ ($(el) s)"
done
# weak scaling with and without the sharded optimizer
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 120/" specs/w1.yaml > specs/w2.yaml
tt_txl_wt103_spec specs/t1.yaml 120
sed -e "s/batch: 60/batch: 120/" specs/t1.yaml > specs/t2.yaml
for s in w t; do
  timeout 150 $T specs/${s}1.yaml --checkpoint-dir /tmp/ws1 --log-every 20 > $L/$s-ws1.log 2>&1; echo "$s 1 GPU rc $?"
  timeout 150 $T specs/${s}2.yaml --gpus 2 --checkpoint-dir /tmp/ws2 --log-every 20 > $L/$s-ws2.log 2>&1; echo "$s 2 GPUs rc $?"
  timeout 150 $T specs/${s}2.yaml --gpus 2 --shard-optimizer --checkpoint-dir /tmp/ws2s --log-every 20 > $L/$s-ws2s.log 2>&1; echo "$s 2 GPUs sharded rc $?"
  r1=$(tt_late_rate $L/$s-ws1.log); r2=$(tt_late_rate $L/$s-ws2.log); r2s=$(tt_late_rate $L/$s-ws2s.log)
  echo "$s: 1 GPU $r1, 2 GPUs $r2 ($(python3 -c "print(f'{$r2/$r1:.3f}x')")), sharded $r2s ($(python3 -c "print(f'{$r2s/$r1:.3f}x')")) ($(el) s)"
  grep -E "valid ppl" $L/$s-ws2.log $L/$s-ws2s.log | tail -2
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
