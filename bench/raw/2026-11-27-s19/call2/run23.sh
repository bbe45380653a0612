#!/usr/bin/env bash
# s19 call 2 (2 GPUs, after run22.sh on the same machine: its builds in /tmp are reused):
# weak scaling on 2 GPUs, one all-reduce and the parts beside the backward (wt103 shapes,
# txl-wt103-base).
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
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
TG=$(find /tmp/tt-b19 -name test_gpu_model -type f | head -1); TT_TEST_ONLY=test_shares timeout 300 $TG > $L/shares.log 2>&1; echo "test_shares ($TG) rc $?: $(grep -E "PASSED|FAILED|SKIP" $L/shares.log | head -4 | tr "\n" " ")"
# (c)
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 120/" specs/w1.yaml > specs/w2.yaml
tt_txl_wt103_spec specs/t1.yaml 120
sed -e "s/batch: 60/batch: 120/" specs/t1.yaml > specs/t2.yaml
for s in w t; do
  timeout 150 $T specs/${s}1.yaml --checkpoint-dir /tmp/ws1 --log-every 20 > $L/$s-ws1.log 2>&1; echo "$s 1 GPU rc $?"
  TT_NCCL_BUCKETS=0 timeout 150 $T specs/${s}2.yaml --gpus 2 --checkpoint-dir /tmp/ws2 --log-every 20 > $L/$s-ws2.log 2>&1; echo "$s 2 GPUs rc $?"
  timeout 150 $T specs/${s}2.yaml --gpus 2 --checkpoint-dir /tmp/ws2b --log-every 20 > $L/$s-ws2b.log 2>&1; echo "$s 2 GPUs parts rc $?"
  r1=$(tt_late_rate $L/$s-ws1.log); r2=$(tt_late_rate $L/$s-ws2.log); r2b=$(tt_late_rate $L/$s-ws2b.log)
  echo "$s: 1 GPU $r1, 2 GPUs one all-reduce $r2 ($(python3 -c "print(f'{$r2/$r1:.3f}x')")), parts $r2b ($(python3 -c "print(f'{$r2b/$r1:.3f}x')")) ($(el) s)"
  grep -h "error\|NCCL" $L/$s-ws2b.log | head -3
done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
