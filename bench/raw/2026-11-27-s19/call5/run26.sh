#!/usr/bin/env bash
# s19 call 5 (4 GPUs): where the 4-GPU wt103 step loses to four 1-GPU steps: NCCL's channels
# (NCCL_MAX_NCHANNELS 4, 8, 16, default), one all-reduce (TT_NCCL_BUCKETS=0), the table summed
# at the end (TT_NCCL_EMB_GLOBAL=0); and torchrun --no-python starting tt-train (the port fix).
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B /tmp/tt-b19 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b19 -j48 --target tt-train) > $L/build.log 2>&1
[ -x /tmp/tt-b19/tt-train ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b19/tt-train
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 120 $T specs/p32.yaml --gpus 2 --checkpoint-dir /tmp/c-p2 --log-json $L/p2.json --log-every 50 > $L/p2.log 2>&1; echo "--gpus 2 rc $?"
timeout 120 torchrun --standalone --nproc_per_node 2 --no-python $T specs/p32.yaml --checkpoint-dir /tmp/c-ptr --log-json $L/ptr.json --log-every 50 > $L/ptr.log 2>&1; echo "torchrun rc $?"
grep -m3 "^tt-train\|rendezvous\|error" $L/ptr.log
cmp -s $L/p2.json $L/ptr.json && echo "torchrun: the same bits as --gpus 2" || echo "torchrun: DIFFERS from --gpus 2"
grep -c . $L/ptr.json
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 240/" specs/w1.yaml > specs/w4.yaml
timeout 100 $T specs/w1.yaml --checkpoint-dir /tmp/ck1 --log-every 20 > $L/w1.log 2>&1; r1=$(tt_late_rate $L/w1.log); echo "1 GPU: $r1"
for v in "" "NCCL_MAX_NCHANNELS=4" "NCCL_MAX_NCHANNELS=8" "NCCL_MAX_NCHANNELS=16" "TT_NCCL_BUCKETS=0" "TT_NCCL_EMB_GLOBAL=0"; do
  n=$(echo "x$v" | tr -c 'a-zA-Z0-9\n' _)
  env $v timeout 100 $T specs/w4.yaml --gpus 4 --checkpoint-dir /tmp/ck4 --log-every 20 > $L/w4$n.log 2>&1; rc=$?
  r=$(tt_late_rate $L/w4$n.log)
  echo "4 GPUs ${v:-default} rc $rc: $r tok/s, $(python3 -c "print(f'{$r/$r1:.3f}x')") ($(el) s)"
  rm -rf /tmp/ck4
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
