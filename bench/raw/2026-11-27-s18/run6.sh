#!/usr/bin/env bash
# s18 call 6 (4 GPUs): tt-train --gpus 4 against one GPU: fp32 losses (ptb, txl-ptb) over 200
# steps, the 4-GPU run twice (bits); kill -9 of one rank; weak scaling bf16 (wt103, txl-wt103-base)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
nvidia-smi topo -m > $L/topo.txt 2>&1
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j64 --target tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=build-gpu/tt-train
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
tt_local_spec specs/txl-ptb.yaml specs/x32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/dropatt: 0.0/dropatt: 0.1/"
for s in p32 x32; do
  timeout 120 $T specs/$s.yaml --checkpoint-dir /tmp/c1-$s --log-json $L/$s-1.json --log-every 50 > $L/$s-1.log 2>&1; echo "$s 1 GPU rc $? ($(el) s)"
  timeout 120 $T specs/$s.yaml --gpus 4 --checkpoint-dir /tmp/c4-$s --log-json $L/$s-4.json --log-every 50 > $L/$s-4.log 2>&1; echo "$s 4 GPUs rc $? ($(el) s)"
  tail -3 $L/$s-4.log
  timeout 120 $T specs/$s.yaml --gpus 4 --checkpoint-dir /tmp/c4b-$s --log-json $L/$s-4b.json --log-every 50 > $L/$s-4b.log 2>&1; echo "$s 4 GPUs again rc $? ($(el) s)"
  python3 ../cmp.py $L/$s-1.json $L/$s-4.json
  cmp -s $L/$s-4.json $L/$s-4b.json && echo "$s: the two 4-GPU runs' logs are identical" || echo "$s: the two 4-GPU runs' logs DIFFER"
  n=0; bad=0; for f in /tmp/c4-$s/step-*/*; do n=$((n+1)); cmp -s $f /tmp/c4b-$s/${f#/tmp/c4-$s/} || bad=$((bad+1)); done; echo "$s: 4-GPU checkpoints: $n files, $bad differ"
done
# kill -9 of rank 2 of a long run: the launcher's status and line, how long it took, what is left
sed -e "s/steps: 200/steps: 100000/" specs/p32.yaml > specs/k.yaml
$T specs/k.yaml --gpus 4 --checkpoint-dir /tmp/ck-kill --log-every 100 > $L/kill.log 2>&1 &
LP=$!
sleep 25
victim=""; for p in $(pgrep -f "specs/k.yaml"); do if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=2"; then victim=$p; fi; done
echo "rank 2 is pid $victim; killing it at $(el) s"
tk=$(date +%s.%N); kill -9 $victim
wait $LP; rc=$?; te=$(date +%s.%N)
echo "launcher rc $rc, $(python3 -c "print(f'{$te-$tk:.1f}')") s after the kill"; tail -3 $L/kill.log
echo "processes left: $(pgrep -f specs/k.yaml | wc -l)"
# weak scaling bf16
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 240/" specs/w1.yaml > specs/w4.yaml
tt_txl_wt103_spec specs/t1.yaml 120
sed -e "s/batch: 60/batch: 240/" specs/t1.yaml > specs/t4.yaml
for s in w t; do
  timeout 150 $T specs/${s}1.yaml --checkpoint-dir /tmp/ws1 --log-every 20 > $L/$s-ws1.log 2>&1; echo "$s 1 GPU rc $?"
  timeout 150 $T specs/${s}4.yaml --gpus 4 --checkpoint-dir /tmp/ws4 --log-every 20 > $L/$s-ws4.log 2>&1; echo "$s 4 GPUs rc $?"
  r1=$(tt_late_rate $L/$s-ws1.log); r4=$(tt_late_rate $L/$s-ws4.log)
  echo "$s weak scaling: 1 GPU $r1 tok/s, 4 GPUs $r4 tok/s: $(python3 -c "print(f'{$r4/$r1:.3f}x')" 2>/dev/null) ($(el) s)"
  grep -E "^tt-train|device memory" $L/$s-ws4.log | head -2
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
