#!/usr/bin/env bash
# s24 call 2 (2 x H200): where the 2-GPU step's 0.5 ms goes (weak scaling 1.77x, wt103 shapes).
# One build of branch bf16-sums (main f50bcf4 + TT_NCCL_SUMS); 300-step runs, late-window tok/s,
# alternating: 1 GPU; 2 GPUs as shipped; one all-reduce after the backward (TT_NCCL_BUCKETS=0);
# NCCL's channels capped (NCCL_MAX_NCHANNELS 4/8/16, NCCL_MAX_CTAS 8); the table summed with the
# rest (TT_NCCL_EMB_GLOBAL=0); bf16 sums capped at 8 channels; two 1-GPU runs at once.
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "commit $(cat ../commit.txt)"; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j32 --target tt-train; } > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built ($(el) s)"
T=build-gpu/tt-train
[ -f "$tt_wt103_data/train.txt" ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/s1.yaml 300
sed -e "s/batch: 60/batch: 120/" specs/s1.yaml > specs/s2.yaml
grep -q "batch: 120" specs/s2.yaml || { echo "no batch 120"; exit 1; }
one() { # NAME ENV... : a 2-GPU run
    local n=$1; shift
    env "$@" timeout 90 $T specs/s2.yaml --gpus 2 --checkpoint-dir /tmp/c2 --log-every 20 > $L/$n.log 2>&1 || echo "$n rc $?"
    echo "$n: $(tt_late_rate $L/$n.log) tok/s ($(el) s)"
}
timeout 90 $T specs/s1.yaml --checkpoint-dir /tmp/c1 --log-every 20 > $L/w1-a.log 2>&1; echo "1 GPU: $(tt_late_rate $L/w1-a.log) ($(el) s)"
one shipped-a NCCL_DEBUG=INFO
grep -E "channels|nChannels|Channel [0-9]+/[0-9]+ :|NCCL version" $L/shipped-a.log | head -8
one nobuckets TT_NCCL_BUCKETS=0
one ch4 NCCL_MAX_NCHANNELS=4
one ch8 NCCL_MAX_NCHANNELS=8
one ch16 NCCL_MAX_NCHANNELS=16
one ctas8 NCCL_MAX_CTAS=8
one noembglobal TT_NCCL_EMB_GLOBAL=0
one bf16 TT_NCCL_SUMS=bf16
one bf16-ch8 TT_NCCL_SUMS=bf16 NCCL_MAX_NCHANNELS=8
one shipped-b
CUDA_VISIBLE_DEVICES=0 timeout 90 $T specs/s1.yaml --checkpoint-dir /tmp/p0 --log-every 20 > $L/pair0.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 90 $T specs/s1.yaml --checkpoint-dir /tmp/p1 --log-every 20 > $L/pair1.log 2>&1
wait
echo "two 1-GPU runs at once: $(tt_late_rate $L/pair0.log) and $(tt_late_rate $L/pair1.log) ($(el) s)"
timeout 90 $T specs/s1.yaml --checkpoint-dir /tmp/c1 --log-every 20 > $L/w1-b.log 2>&1; echo "1 GPU again: $(tt_late_rate $L/w1-b.log) ($(el) s)"
rm -f specs/s1.yaml specs/s2.yaml
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
