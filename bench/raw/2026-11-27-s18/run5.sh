#!/usr/bin/env bash
# s18 call 5 (2 GPUs): tt-train --gpus 2 against one GPU: fp32 losses (ptb, txl-ptb with dropatt)
# over 200 steps; the 2-GPU run twice (bits); a 2-GPU checkpoint resumed on 1 GPU (txl);
# weak scaling bf16 (wt103 shapes, txl-wt103-base)
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
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j32 --target tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
grep -i nccl build-gpu/CMakeCache.txt | head -3
echo "built $(el) s"
T=build-gpu/tt-train
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
tt_local_spec specs/txl-ptb.yaml specs/x32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/dropatt: 0.0/dropatt: 0.1/"
for s in p32 x32; do
  timeout 120 $T specs/$s.yaml --checkpoint-dir /tmp/c1-$s --log-json $L/$s-1.json --log-every 50 > $L/$s-1.log 2>&1; echo "$s 1 GPU rc $? ($(el) s)"
  timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/c2-$s --log-json $L/$s-2.json --log-every 50 > $L/$s-2.log 2>&1; echo "$s 2 GPUs rc $? ($(el) s)"
  tail -4 $L/$s-2.log
  timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/c2b-$s --log-json $L/$s-2b.json --log-every 50 > $L/$s-2b.log 2>&1; echo "$s 2 GPUs again rc $? ($(el) s)"
  python3 ../cmp.py $L/$s-1.json $L/$s-2.json
  cmp -s $L/$s-2.json $L/$s-2b.json && echo "$s: the two 2-GPU runs' logs are identical" || echo "$s: the two 2-GPU runs' logs DIFFER"
  n=0; bad=0; for f in /tmp/c2-$s/step-*/*; do n=$((n+1)); cmp -s $f /tmp/c2b-$s/${f#/tmp/c2-$s/} || bad=$((bad+1)); done; echo "$s: 2-GPU checkpoints: $n files, $bad differ"
done
# a 2-GPU run stopped at 100, resumed on one GPU to 200, against the 2-GPU run's losses
timeout 120 $T specs/x32.yaml --gpus 2 --stop-after 100 --checkpoint-dir /tmp/cr --log-json $L/xr.json > $L/xr-a.log 2>&1; echo "txl stop at 100 on 2 GPUs rc $?"; tail -2 $L/xr-a.log
timeout 120 $T specs/x32.yaml --resume --checkpoint-dir /tmp/cr --log-json $L/xr.json > $L/xr-b.log 2>&1; echo "resumed on 1 GPU rc $?"; tail -2 $L/xr-b.log
python3 ../cmp.py $L/x32-2.json $L/xr.json
echo "fp32 done $(el) s"
# weak scaling, bf16
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 120/" specs/w1.yaml > specs/w2.yaml
tt_txl_wt103_spec specs/t1.yaml 120
sed -e "s/batch: 60/batch: 120/" specs/t1.yaml > specs/t2.yaml
grep -c "batch: 120" specs/w2.yaml specs/t2.yaml
for s in w t; do
  timeout 150 $T specs/${s}1.yaml --checkpoint-dir /tmp/ws1 --log-every 20 > $L/$s-ws1.log 2>&1; echo "$s 1 GPU rc $?"
  timeout 150 $T specs/${s}2.yaml --gpus 2 --checkpoint-dir /tmp/ws2 --log-every 20 > $L/$s-ws2.log 2>&1; echo "$s 2 GPUs rc $?"
  r1=$(tt_late_rate $L/$s-ws1.log); r2=$(tt_late_rate $L/$s-ws2.log)
  echo "$s weak scaling: 1 GPU $r1 tok/s, 2 GPUs $r2 tok/s: $(python3 -c "print(f'{$r2/$r1:.3f}x')" 2>/dev/null) ($(el) s)"
  grep -E "^tt-train|device memory|^trained" $L/$s-ws2.log | head -3
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
