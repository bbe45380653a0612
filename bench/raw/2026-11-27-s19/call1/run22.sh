#!/usr/bin/env bash
# s19 call 1 (2 GPUs). (a) s18-tidy: 1 GPU, the same bits as main (ptb fp32 200 steps, wt103
# shapes bf16 60 steps: logs and checkpoints), test_shares. (b) the parts beside the backward:
# TT_NCCL_EMB_GLOBAL=0 gives the same bits as one all-reduce on 2 GPUs (p32, x32); with the
# embedding over the whole batch: twice the same bits, and its drift from 1 GPU beside the one
# all-reduce's; untied too. (c) weak scaling on 2 GPUs, one all-reduce and parts.
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
(cmake -S . -B /tmp/tt-b19 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b19 -j24 --target tt-train test_gpu_model) > $L/build.log 2>&1 &
(cd ../main-src && cmake -S . -B /tmp/tt-m19 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-m19 -j8 --target tt-train) > $L/build-main.log 2>&1 &
wait
[ -x /tmp/tt-b19/tt-train ] || { tail -30 $L/build.log; exit 1; }
[ -x /tmp/tt-m19/tt-train ] || { tail -30 $L/build-main.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b19/tt-train
M=/tmp/tt-m19/tt-train
same_ck() { # same_ck DIR1 DIR2: every file of the latest step folders equal
  local a=$1/$(cat $1/latest) b=$2/$(cat $2/latest) bad=0
  for f in $(cd $a && ls); do cmp -s $a/$f $b/$f || { echo "  $f differs"; bad=1; }; done
  [ $bad = 0 ] && echo "  checkpoints byte-identical ($(ls $a | tr '\n' ' '))"
}
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
sed -e "s/tie_weights: true/tie_weights: false/" specs/p32.yaml > specs/u32.yaml
tt_local_spec specs/txl-ptb.yaml specs/x32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/dropatt: 0.0/dropatt: 0.1/"
grep -q "tie_weights: false" specs/u32.yaml || echo "u32 is not untied"
# (a)
timeout 120 $M specs/p32.yaml --checkpoint-dir /tmp/m-p32 --log-json $L/p32-main.json --log-every 50 > $L/p32-main.log 2>&1; echo "main p32 rc $?"
timeout 120 $T specs/p32.yaml --checkpoint-dir /tmp/n-p32 --log-json $L/p32-1.json --log-every 50 > $L/p32-1.log 2>&1; echo "branch p32 rc $?"
cmp -s $L/p32-main.json $L/p32-1.json && echo "p32 1 GPU: same log as main" || echo "p32 1 GPU: log DIFFERS from main"
same_ck /tmp/m-p32 /tmp/n-p32
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w60.yaml 60
timeout 150 $M specs/w60.yaml --checkpoint-dir /tmp/m-w --log-every 20 > $L/w60-main.log 2>&1; echo "main w60 rc $?"
timeout 150 $T specs/w60.yaml --checkpoint-dir /tmp/n-w --log-every 20 > $L/w60-1.log 2>&1; echo "branch w60 rc $?"
same_ck /tmp/m-w /tmp/n-w
TT_TEST_ONLY=test_shares timeout 300 /tmp/tt-b19/test_gpu_model > $L/shares.log 2>&1; echo "test_shares rc $? $(grep -c PASSED $L/shares.log) PASSED lines; $(grep -E 'FAILED|ERROR' $L/shares.log | head -3)"
echo "(a) done $(el) s"
# (b)
for s in p32 u32 x32; do
  [ $s = p32 ] || timeout 120 $T specs/$s.yaml --checkpoint-dir /tmp/c1-$s --log-json $L/$s-1.json --log-every 50 > $L/$s-1.log 2>&1
  TT_NCCL_BUCKETS=0 timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/c0-$s --log-json $L/$s-0.json --log-every 50 > $L/$s-0.log 2>&1; echo "$s one all-reduce rc $?"
  TT_NCCL_EMB_GLOBAL=0 timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/cl-$s --log-json $L/$s-l.json --log-every 50 > $L/$s-l.log 2>&1; echo "$s parts, local embedding rc $?"
  cmp -s $L/$s-0.json $L/$s-l.json && echo "$s: parts (local embedding) give the same bits as one all-reduce" || { echo "$s: parts (local embedding) DIFFER"; python3 ../cmp.py $L/$s-0.json $L/$s-l.json; }
  same_ck /tmp/c0-$s /tmp/cl-$s
  for i in 1 2; do
    timeout 120 $T specs/$s.yaml --gpus 2 --checkpoint-dir /tmp/cg$i-$s --log-json $L/$s-g$i.json --log-every 50 > $L/$s-g$i.log 2>&1; echo "$s parts, whole-batch embedding run $i rc $?"
  done
  cmp -s $L/$s-g1.json $L/$s-g2.json && echo "$s: whole-batch embedding twice: same bits" || echo "$s: whole-batch embedding twice DIFFERS"
  same_ck /tmp/cg1-$s /tmp/cg2-$s
  echo "$s drift from 1 GPU, one all-reduce: $(python3 ../cmp.py $L/$s-1.json $L/$s-0.json)"
  echo "$s drift from 1 GPU, parts + whole-batch embedding: $(python3 ../cmp.py $L/$s-1.json $L/$s-g1.json)"
done
echo "(b) done $(el) s"
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
