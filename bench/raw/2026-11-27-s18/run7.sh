#!/usr/bin/env bash
# s18 call 7 (2 GPUs): validation shared out and tt-eval --gpus: the perplexity of one checkpoint
# on 1 and 2 GPUs (ptb, txl-ptb; valid and test), and tt-train --gpus 2's validation line
# against one GPU's for the same checkpoint
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
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j32 --target tt-train tt-eval) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=build-gpu/tt-train; E=build-gpu/tt-eval
tt_local_spec specs/ptb.yaml specs/pb.yaml -e "s/steps: 40000/steps: 300/" -e "s/eval_interval: 1000/eval_interval: 150/"
tt_local_spec specs/txl-ptb.yaml specs/xb.yaml -e "s/steps: 40000/steps: 300/" -e "s/eval_interval: 1000/eval_interval: 150/" -e "s/dropatt: 0.0/dropatt: 0.1/"
for s in pb xb; do
  timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/c-$s --log-every 100 > $L/$s-train2.log 2>&1; echo "$s trained on 2 GPUs rc $? ($(el) s)"
  grep -E "valid ppl" $L/$s-train2.log
  for sp in valid test; do
    timeout 60 $E specs/$s.yaml --checkpoint /tmp/c-$s --split $sp --json > $L/$s-$sp-1.json 2> $L/$s-$sp-1.err; echo "$s $sp 1 GPU rc $?: $(cat $L/$s-$sp-1.json)"
    timeout 60 $E specs/$s.yaml --checkpoint /tmp/c-$s --split $sp --json --gpus 2 > $L/$s-$sp-2.json 2> $L/$s-$sp-2.err; echo "$s $sp 2 GPUs rc $?: $(cat $L/$s-$sp-2.json)"
    timeout 60 $E specs/$s.yaml --checkpoint /tmp/c-$s --split $sp --gpus 2 --batch 7 > $L/$s-$sp-2b.txt 2>&1; echo "$s $sp 2 GPUs --batch 7 rc $?: $(cat $L/$s-$sp-2b.txt)"
    cat $L/$s-$sp-2.err | head -3
  done
done
# the 1-GPU training run's validation at the same steps, from the same start, for comparison
timeout 120 $T specs/pb.yaml --checkpoint-dir /tmp/c1-pb --log-every 100 > $L/pb-train1.log 2>&1; echo "pb trained on 1 GPU rc $?"; grep -E "valid ppl" $L/pb-train1.log
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
