#!/usr/bin/env bash
# s20 call 5 (4 GPUs): NCCL's settings against the weak-scaling gap (wt103 shapes, 60 sequences
# a GPU, 300 steps): 1 GPU; 4 GPUs as they run now; and with NCCL_MIN_NCHANNELS=32,
# NCCL_MAX_NCHANNELS=8, NCCL_PROTO=Simple, NCCL_ALGO=Tree, NCCL_BUFFSIZE=16 MiB; 1 GPU again.
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
(cmake -S . -B /tmp/tt-b5 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=OFF && cmake --build /tmp/tt-b5 -j48 --target tt-train) > $L/build.log 2>&1
[ -x /tmp/tt-b5/tt-train ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b5/tt-train
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
sed -e "s/batch: 60/batch: 240/" specs/w1.yaml > specs/w4.yaml
echo "corpus and specs $(el) s"
run() { # run NAME SPEC [ENV...] -- [ARGS...]
  local n=$1 s=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  env "${envs[@]}" timeout 150 $T $s --checkpoint-dir /tmp/ck-$n --log-every 20 "$@" > $L/$n.log 2>&1; local rc=$?
  echo "$n ${envs[*]} rc $rc: $(tt_late_rate $L/$n.log) tok/s ($(el) s)"
  rm -rf /tmp/ck-$n
}
run w1 specs/w1.yaml
run w4 specs/w4.yaml -- --gpus 4
run w4-ch32 specs/w4.yaml NCCL_MIN_NCHANNELS=32 -- --gpus 4
run w4-ch8 specs/w4.yaml NCCL_MAX_NCHANNELS=8 -- --gpus 4
run w4-simple specs/w4.yaml NCCL_PROTO=Simple -- --gpus 4
run w4-tree specs/w4.yaml NCCL_ALGO=Tree -- --gpus 4
run w4-buf specs/w4.yaml NCCL_BUFFSIZE=16777216 -- --gpus 4
run w4b specs/w4.yaml -- --gpus 4
run w1b specs/w1.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
