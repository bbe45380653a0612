#!/usr/bin/env bash
# s20 call 2 (2 GPUs): run1.sh part b again after the watchdog exits at once and spins 0.25 s.
# (test_gpu_kernels' adam with a NaN gradient and an infinite loss; test_gpu_repro's
# test_nonfinite_step on the GPU); the guard on 2 GPUs (stop, and skip: step 50's checkpoint holds
# step 49's tensors); the step-end poll's cost (TT_RANK_TIMEOUT_S=0: the plain synchronize);
# torchrun with rank 1 stopped (kill -STOP) and with rank 1 killed (kill -9).
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
PART=${1:-a}
[ -x /tmp/tt-b2/tt-train ] || (cmake -S . -B /tmp/tt-b2 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b2 -j32) > $L/build.log 2>&1
[ -x /tmp/tt-b2/tt-train ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b2/tt-train
if [ $PART = a ]; then
CUDA_VISIBLE_DEVICES=0 timeout 300 ctest --test-dir /tmp/tt-b2 -L gpu --output-on-failure > $L/gpu-tests.log 2>&1; echo "GPU tests rc $?: $(grep -E 'tests passed|tests failed' $L/gpu-tests.log)"
grep -E "Failed|FAILED|\*\*\*|Passed|Skipped" $L/gpu-tests.log | head -8
grep -E "NaN gradient|infinite loss|skipped with step 4|step 5: the loss" $L/gpu-tests.log | head -8
echo "($(el) s)"
tt_local_spec specs/ptb.yaml specs/p.yaml -e "s/steps: 40000/steps: 100/" -e "s/eval_interval: 1000/eval_interval: 0/"
TT_FAULT_NAN_STEP=50 timeout 120 $T specs/p.yaml --gpus 2 --checkpoint-dir /tmp/c-stop --log-every 100 > $L/stop.out 2> $L/stop.err; echo "2 GPUs, NaN at step 50: rc $?, latest $(cat /tmp/c-stop/latest 2>/dev/null || echo none)"; cat $L/stop.err
timeout 120 $T specs/p.yaml --gpus 2 --checkpoint-dir /tmp/c-49 --stop-after 49 > $L/s49.log 2>&1; echo "2 GPUs to step 49: rc $?"
TT_FAULT_NAN_STEP=50 timeout 120 $T specs/p.yaml --gpus 2 --checkpoint-dir /tmp/c-skip --stop-after 50 --skip-nonfinite 1 > $L/skip.log 2>&1; echo "2 GPUs, NaN at step 50 skipped: rc $?"; grep "step 50:" $L/skip.log
for f in model optim; do echo "$f: $(python3 ../sttensors.py /tmp/c-49/step-00000049/$f.safetensors /tmp/c-skip/step-00000050/$f.safetensors)"; done
echo "($(el) s)"
fi
if [ $PART = b ]; then
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w.yaml 80
for v in 0 20 0 20; do
  TT_RANK_TIMEOUT_S=$v timeout 150 $T specs/w.yaml --gpus 2 --checkpoint-dir /tmp/c-w$v --log-every 20 > $L/w-$v.log 2>&1; echo "wt103 shapes 2 GPUs TT_RANK_TIMEOUT_S=$v rc $?: $(grep 'step 80/80' $L/w-$v.log | grep -o '[0-9]* tok/s')"
done
echo "($(el) s)"
tt_local_spec specs/ptb.yaml specs/long.yaml -e "s/steps: 40000/steps: 4000000/" -e "s/eval_interval: 1000/eval_interval: 0/"
for how in STOP KILL; do
  t0=$(date +%s.%N)
  timeout 200 torchrun --standalone --nproc_per_node 2 --no-python $T specs/long.yaml --checkpoint-dir /tmp/c-$how --log-every 2000 > $L/hang-$how.log 2>&1 &
  tr_pid=$!
  sleep 20
  r1=$(pgrep -f "tt-b2/tt-train specs/long.yaml" | while read p; do grep -qz '^RANK=1$' /proc/$p/environ 2>/dev/null && echo $p; done | head -1)
  echo "$how: rank 1 pid ${r1:-none} at $(el) s"
  [ -n "$r1" ] && kill -$how $r1
  ts=$(date +%s.%N)
  wait $tr_pid; rc=$?
  te=$(date +%s.%N)
  echo "$how: torchrun rc $rc, $(python3 -c "print(f'{$te-$ts:.1f}')") s after"
  grep -m3 "rank 0 of 2\|this rank stops\|exitcode\|Signal" $L/hang-$how.log
  sleep 1
  echo "$how: left $(pgrep -f 'tt-b2/tt-train' | wc -l) tt-train processes"
  pkill -9 -f 'tt-b2/tt-train'
done
fi
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs-$PART.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
