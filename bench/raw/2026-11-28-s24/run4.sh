#!/usr/bin/env bash
# s24 call 4 (2 x H200): branch s24-comm-priority (on s24-cluster-sums: the sums' stream at the
# greatest priority, TT_NCCL_PRIORITY=0 turns it off) against main db4acc6, both built here,
# alternating: wt103 shapes on 2 GPUs, 300-step runs (late-window tok/s): main; the branch
# without priority (cluster sums alone); the branch; the branch with 32 channels. Then the
# branch's fp32 trajectory against 1 GPU (200 steps), twice for the same bits, and
# txl-wt103-base on 2 GPUs, main and the branch, twice.
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "new $(cat ../commit.txt), old $(cat ../old.txt)"; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
(cd ../old && cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 &
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train; } > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
[ -x ../old/build-gpu/tt-train ] || { tail -30 $L/build-old.log; exit 1; }
echo "built ($(el) s)"
[ -f "$tt_wt103_data/train.txt" ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/s1.yaml 300
sed -e "s/batch: 60/batch: 120/" specs/s1.yaml > specs/s2.yaml
N=build-gpu/tt-train O=../old/build-gpu/tt-train
run2() { # NAME SPEC BINARY ENV...
    local n=$1 s=$2 b=$3; shift 3
    env "$@" timeout 100 $b $s --gpus 2 --checkpoint-dir /tmp/c2 --log-every 20 > $L/$n.log 2>&1 || echo "$n rc $?"
    echo "$n: $(tt_late_rate $L/$n.log) tok/s ($(el) s)"
}
timeout 90 $N specs/s1.yaml --checkpoint-dir /tmp/c1 --log-every 20 > $L/w1.log 2>&1; echo "1 GPU: $(tt_late_rate $L/w1.log) ($(el) s)"
for r in 1 2; do
    run2 main-$r specs/s2.yaml $O
    run2 noprio-$r specs/s2.yaml $N TT_NCCL_PRIORITY=0
    run2 prio-$r specs/s2.yaml $N
    run2 prio-ch32-$r specs/s2.yaml $N NCCL_MIN_NCHANNELS=32 NCCL_MAX_NCHANNELS=32
done
sed -e "s/steps: 300/steps: 200/" -e "s/^  precision: bf16/  precision: fp32/" specs/s2.yaml > specs/sl.yaml
timeout 120 $N specs/sl.yaml --checkpoint-dir /tmp/sl1 --log-json $L/sl-1.json --log-every 1 > $L/sl-1.log 2>&1
for n in 0 1; do timeout 120 $N specs/sl.yaml --gpus 2 --checkpoint-dir /tmp/sl2 --log-json $L/sl-2-$n.json --log-every 1 > $L/sl-2-$n.log 2>&1; done
python3 - $L/sl-1.json $L/sl-2-0.json <<'PY'
import json, sys
def load(p):
    return {o['step']: o['loss'] for o in map(json.loads, open(p)) if 'loss' in o}
a, b = load(sys.argv[1]), load(sys.argv[2])
steps = sorted(set(a) & set(b))
worst = max((abs(a[s] - b[s]) / abs(a[s]), s) for s in steps)
print(f"fp32, 2 GPUs against 1, {len(steps)} steps: worst relative difference {worst[0]:.2e} at step {worst[1]}; first {a[1]:.8f} / {b[1]:.8f}; last {a[steps[-1]]:.6f} / {b[steps[-1]]:.6f}")
PY
cmp -s $L/sl-2-0.json $L/sl-2-1.json && echo "2 GPUs twice: identical logs" || echo "2 GPUs twice: logs DIFFER"
tt_txl_wt103_spec specs/t1.yaml 120
sed -e "s/batch: 60/batch: 120/" specs/t1.yaml > specs/t2.yaml
for r in 1 2; do run2 txl-main-$r specs/t2.yaml $O; run2 txl-prio-$r specs/t2.yaml $N; done
rm -f specs/s1.yaml specs/s2.yaml specs/sl.yaml specs/t1.yaml specs/t2.yaml
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
