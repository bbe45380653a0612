#!/usr/bin/env bash
# s19 call 4 (4 GPUs, after run24.sh on the same machine): PyTorch DistributedDataParallel of the
# wt103 shapes (bench/torch_tt.py time --ddp, torch.compile, bf16 autocast, 60 sequences a GPU)
# on 1, 2 and 4 GPUs under torchrun, and ours again on 1 and 4 in the same call.
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
T=/tmp/tt-b19/tt-train
[ -x $T ] || { echo "no build from run24"; exit 1; }
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
values=267735,256,6,40,2,80,2100,60,0.1,true,0,20000:40000:200000,1,true
for k in 1 2 4; do
  timeout 170 torchrun --standalone --nproc_per_node $k bench/torch_tt.py time "$values" --ddp --compile --bf16 --steps 50 --corpus $tt_wt103_data/train.txt > $L/ddp$k.log 2>&1
  echo "DDP $k GPUs rc $?: $(grep '^peer ' $L/ddp$k.log | tail -1) ($(el) s)"
  if ! grep -q '^peer ' $L/ddp$k.log; then
    grep -m3 -i "error" $L/ddp$k.log
    timeout 170 torchrun --standalone --nproc_per_node $k bench/torch_tt.py time "$values" --ddp --compile --no-capture --bf16 --steps 50 --corpus $tt_wt103_data/train.txt > $L/ddp$k-nc.log 2>&1
    echo "DDP $k GPUs, nonzero outside the graph, rc $?: $(grep '^peer ' $L/ddp$k-nc.log | tail -1) ($(el) s)"
  fi
done
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 240/" specs/w1.yaml > specs/w4.yaml
timeout 100 $T specs/w1.yaml --checkpoint-dir /tmp/ck-o1 --log-every 20 > $L/o1.log 2>&1; echo "ours 1 GPU rc $?: $(tt_late_rate $L/o1.log) tok/s"
timeout 100 $T specs/w4.yaml --gpus 4 --checkpoint-dir /tmp/ck-o4 --log-every 20 > $L/o4.log 2>&1; echo "ours 4 GPUs rc $?: $(tt_late_rate $L/o4.log) tok/s"
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
