#!/usr/bin/env bash
# s18 call 9 (2 GPUs): a hung rank (kill -STOP) ends a --gpus 2 run with a line naming it
# (TT_RANKS_STALL_S=10); a normal 2-GPU run with validation and checkpoints is not stopped; the
# Transformer-XL tt-eval with --batch 7 on 2 GPUs against one GPU
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
T=build-gpu/tt-train
tt_local_spec specs/ptb.yaml specs/pn.yaml -e "s/steps: 40000/steps: 2000/" -e "s/eval_interval: 1000/eval_interval: 500/" -e "s/interval: 1000}/interval: 500}/"
TT_RANKS_STALL_S=10 timeout 120 $T specs/pn.yaml --gpus 2 --checkpoint-dir /tmp/cn --log-every 500 > $L/normal.log 2>&1; echo "a normal run, stall limit 10 s: rc $? ($(el) s)"; tail -3 $L/normal.log
tt_local_spec specs/ptb.yaml specs/ph.yaml -e "s/steps: 40000/steps: 1000000/" -e "s/eval_interval: 1000/eval_interval: 0/"
TT_RANKS_STALL_S=10 $T specs/ph.yaml --gpus 2 --checkpoint-dir /tmp/ch --log-every 1000 > $L/hang.log 2>&1 &
LP=$!
sleep 20
victim=""; for p in $(pgrep -f "specs/ph.yaml"); do if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=1"; then victim=$p; fi; done
echo "rank 1 is pid $victim; SIGSTOP at $(el) s"
tk=$(date +%s.%N); kill -STOP $victim
wait $LP; rc=$?; te=$(date +%s.%N)
echo "launcher rc $rc, $(python3 -c "print(f'{$te-$tk:.1f}')") s after the stop"; tail -2 $L/hang.log
echo "processes left: $(pgrep -f specs/ph.yaml | wc -l)"
ls /tmp/ch; cat /tmp/ch/latest 2>/dev/null
# Transformer-XL evaluation with 7 streams on 1 and 2 GPUs
tt_local_spec specs/txl-ptb.yaml specs/xb.yaml -e "s/steps: 40000/steps: 100/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 120 $T specs/xb.yaml --checkpoint-dir /tmp/cx > $L/xb.log 2>&1; echo "txl trained rc $?"
for g in 1 2; do timeout 60 build-gpu/tt-eval specs/xb.yaml --checkpoint /tmp/cx --batch 7 --json --gpus $g; echo "rc $?"; done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
