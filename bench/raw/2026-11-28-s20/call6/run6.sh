#!/usr/bin/env bash
# s20 call 6 (4 GPUs, warm after call 5): strong scaling of the wt103 shapes (the spec's global
# batch of 60 on 1, 2 and 4 GPUs) and the communication's share of a step, measured as the
# difference from one GPU running a rank's share alone (batch 30 and 15: the same work a GPU
# without the sums): share = 1 - rate(K GPUs) / (K x rate(1 GPU, batch 60 / K)).
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/gpu.txt
T=/tmp/tt-b5/tt-train
[ -x $T ] || { echo "no build (not warm)"; exit 1; }
tt_wt103_spec specs/w1.yaml 300
for b in 30 15; do sed -e "s/batch: 60/batch: $b/" -e "s/steps: 300/steps: $((300 * 60 / b))/" specs/w1.yaml > specs/b$b.yaml; done
run() { # run NAME SPEC [ARGS...]
  local n=$1 s=$2; shift 2
  timeout 150 $T $s --checkpoint-dir /tmp/ck-$n --log-every 20 "$@" > $L/$n.log 2>&1; local rc=$?
  echo "$n rc $rc: $(tt_late_rate $L/$n.log) tok/s ($(el) s)"
  rm -rf /tmp/ck-$n
}
run b60 specs/w1.yaml
run b30 specs/b30.yaml
run b15 specs/b15.yaml
run s2 specs/w1.yaml --gpus 2
run s4 specs/w1.yaml --gpus 4
run s4-shard specs/w1.yaml --gpus 4 --shard-optimizer
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
