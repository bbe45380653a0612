#!/usr/bin/env bash
# s19 call 7 (2 GPUs): main's last code. The GPU tests on one GPU (ctest -L gpu); a normal 2-GPU
# run (the step's end now polled); a rank stopped (kill -STOP) under torchrun: the other ends
# within TT_RANK_TIMEOUT_S with one line, torchrun ends, no process left.
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
(cmake -S . -B /tmp/tt-b20 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build /tmp/tt-b20 -j32) > $L/build.log 2>&1
[ -x /tmp/tt-b20/tt-train ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b20/tt-train
CUDA_VISIBLE_DEVICES=0 timeout 300 ctest --test-dir /tmp/tt-b20 -L gpu --output-on-failure > $L/gpu-tests.log 2>&1; echo "GPU tests rc $?: $(grep -E 'tests passed|tests failed' $L/gpu-tests.log)"
grep -E "Failed|FAILED|\*\*\*" $L/gpu-tests.log | head -5
echo "($(el) s)"
tt_local_spec specs/ptb.yaml specs/p.yaml -e "s/steps: 40000/steps: 300/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 120 $T specs/p.yaml --gpus 2 --checkpoint-dir /tmp/c-p --log-every 100 > $L/p2.log 2>&1; echo "2 GPUs rc $?: $(grep -m1 '^trained' $L/p2.log)"
tt_local_spec specs/ptb.yaml specs/long.yaml -e "s/steps: 40000/steps: 4000000/" -e "s/eval_interval: 1000/eval_interval: 0/"
t0=$(date +%s.%N)
TT_RANK_TIMEOUT_S=20 timeout 200 torchrun --standalone --nproc_per_node 2 --no-python $T specs/long.yaml --checkpoint-dir /tmp/c-long --log-every 500 > $L/hang.log 2>&1 &
tr_pid=$!
sleep 25
r1=$(pgrep -f "tt-b20/tt-train specs/long.yaml" | while read p; do grep -qz '^RANK=1$' /proc/$p/environ 2>/dev/null && echo $p; done | head -1)
echo "rank 1 pid ${r1:-none}; stopping it at $(el) s"
[ -n "$r1" ] && kill -STOP $r1
ts=$(date +%s.%N)
wait $tr_pid; rc=$?
te=$(date +%s.%N)
echo "torchrun rc $rc, $(python3 -c "print(f'{$te-$ts:.1f}')") s after the stop"
grep -m3 "rank .* has waited\|Root Cause\|exitcode" $L/hang.log
sleep 2
echo "left: $(pgrep -f 'tt-b20/tt-train' | wc -l) tt-train processes"
pkill -9 -f 'tt-b20/tt-train'
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
