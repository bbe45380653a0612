#!/usr/bin/env bash
# s18 call 10 (2 GPUs): Ctrl-C (SIGINT) to a --gpus 2 launcher: every rank stops after the same
# step with a checkpoint; torchrun as the launcher; strong scaling (wt103 shapes, batch 60 on 1
# and on 2 GPUs)
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
tt_local_spec specs/ptb.yaml specs/ph.yaml -e "s/steps: 40000/steps: 1000000/" -e "s/eval_interval: 1000/eval_interval: 0/"
$T specs/ph.yaml --gpus 2 --checkpoint-dir /tmp/ci --log-every 1000 > $L/sigint.log 2>&1 &
LP=$!
sleep 20
kill -INT $LP
wait $LP; echo "SIGINT to the launcher: rc $? ($(el) s)"; tail -2 $L/sigint.log
echo "processes left: $(pgrep -f specs/ph.yaml | wc -l); latest: $(cat /tmp/ci/latest)"
timeout 60 $T specs/ph.yaml --resume --stop-after $(( $(cat /tmp/ci/latest | sed 's/step-0*//') + 100 )) --checkpoint-dir /tmp/ci --log-every 50 > $L/resume.log 2>&1; echo "resumed on 1 GPU for 100 steps: rc $?"; grep -E "resumed|trained" $L/resume.log
# torchrun as the launcher
tt_local_spec specs/ptb.yaml specs/pt.yaml -e "s/steps: 40000/steps: 300/" -e "s/eval_interval: 1000/eval_interval: 0/"
TR=$(command -v torchrun || echo /opt/torch/.venv/bin/torchrun)
timeout 120 $TR --nproc_per_node 2 --master_port 29517 $T specs/pt.yaml --checkpoint-dir /tmp/ct --log-json $L/pt-torchrun.json --log-every 100 > $L/torchrun.log 2>&1; echo "torchrun 2 ranks: rc $?"; grep -E "^tt-train|^trained" $L/torchrun.log | head -3
timeout 120 $T specs/pt.yaml --gpus 2 --checkpoint-dir /tmp/cg --log-json $L/pt-gpus.json --log-every 100 > $L/gpus.log 2>&1; echo "--gpus 2: rc $?"
cmp -s $L/pt-torchrun.json $L/pt-gpus.json && echo "torchrun and --gpus 2: identical logs" || echo "torchrun and --gpus 2: logs DIFFER"
# strong scaling: the wt103 shapes' batch 60 on 1 and 2 GPUs
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
timeout 150 $T specs/w1.yaml --checkpoint-dir /tmp/ss1 --log-every 20 > $L/ss1.log 2>&1; echo "w 1 GPU rc $?"
timeout 150 $T specs/w1.yaml --gpus 2 --checkpoint-dir /tmp/ss2 --log-every 20 > $L/ss2.log 2>&1; echo "w 2 GPUs rc $?"
r1=$(tt_late_rate $L/ss1.log); r2=$(tt_late_rate $L/ss2.log)
echo "strong scaling, batch 60: 1 GPU $r1 tok/s, 2 GPUs $r2 tok/s ($(python3 -c "print(f'{$r2/$r1:.3f}x')"))"
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
