#!/usr/bin/env bash
# s19 call 6 (4 GPUs): branch s19-clusters (each cluster's output weights summed as soon as
# written). Same bits where the sums are a + b (2 GPUs): untied ptb and untied wt103 shapes (fp32,
# 2 sequences a rank: steps whose batch has no row of a tail cluster) with the table summed with
# the rest, against one all-reduce; the default twice on 4 GPUs (wt103 shapes fp32); weak
# scaling with and without the clusters' early sums.
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
(cmake -S . -B /tmp/tt-b19 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b19 -j48 --target tt-train) > $L/build.log 2>&1
[ -x /tmp/tt-b19/tt-train ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
T=/tmp/tt-b19/tt-train
same() { cmp -s $L/$1.json $L/$2.json && echo "$1 = $2: same bits" || echo "$1 vs $2: DIFFER: $(python3 ../cmp.py $L/$1.json $L/$2.json)"; }
go() { # go NAME SPEC ENV... -- ARGS...
  local n=$1 s=$2; shift 2; local e=()
  while [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 150 $T $s --checkpoint-dir /tmp/c-$n --log-json $L/$n.json --log-every 50 "$@" > $L/$n.log 2>&1; echo "$n rc $?"
  rm -rf /tmp/c-$n
}
tt_local_spec specs/ptb.yaml specs/u32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/tie_weights: true/tie_weights: false/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
sed -e "s/tie_weights: true/tie_weights: false/" -e "s/precision: bf16/precision: fp32/" -e "s/batch: 60/batch: 4/" -e "s/steps: 300/steps: 100/" specs/w1.yaml > specs/wu.yaml
sed -e "s/precision: bf16/precision: fp32/" -e "s/batch: 60/batch: 16/" -e "s/steps: 300/steps: 100/" specs/w1.yaml > specs/wf.yaml
grep -c "tie_weights: false" specs/u32.yaml specs/wu.yaml
go u0 specs/u32.yaml TT_NCCL_BUCKETS=0 -- --gpus 2
go ul specs/u32.yaml TT_NCCL_EMB_GLOBAL=0 -- --gpus 2
same u0 ul
go w0 specs/wu.yaml TT_NCCL_BUCKETS=0 -- --gpus 2
go wl specs/wu.yaml TT_NCCL_EMB_GLOBAL=0 -- --gpus 2
same w0 wl
go f1 specs/wf.yaml TT_X=1 -- --gpus 4
go f2 specs/wf.yaml TT_X=1 -- --gpus 4
same f1 f2
echo "(correctness $(el) s)"
tt_txl_wt103_spec specs/t1.yaml 120
for k in 2 4; do sed -e "s/batch: 60/batch: $((60 * k))/" specs/w1.yaml > specs/w$k.yaml; done
sed -e "s/batch: 60/batch: 240/" specs/t1.yaml > specs/t4.yaml
rate() { # rate NAME SPEC ENV... -- ARGS...
  local n=$1 s=$2; shift 2; local e=()
  while [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 150 $T $s --checkpoint-dir /tmp/k-$n --log-every 20 "$@" > $L/$n.log 2>&1; local rc=$?
  rm -rf /tmp/k-$n; echo "$n rc $rc: $(tt_late_rate $L/$n.log)"
}
rate w1 specs/w1.yaml TT_X=1 --
rate w2 specs/w2.yaml TT_X=1 -- --gpus 2
rate w4 specs/w4.yaml TT_X=1 -- --gpus 4
rate w4n specs/w4.yaml TT_NCCL_CLUSTERS=0 -- --gpus 4
rate t1 specs/t1.yaml TT_X=1 --
rate t4 specs/t4.yaml TT_X=1 -- --gpus 4
rate t4n specs/t4.yaml TT_NCCL_CLUSTERS=0 -- --gpus 4
for m in w t; do r1=$(tt_late_rate $L/${m}1.log); for k in 2 4 4n; do [ -f $L/$m$k.log ] && echo "$m $k: $(python3 -c "print(f'{$(tt_late_rate $L/$m$k.log)/$r1:.3f}x')")"; done; done
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
