#!/usr/bin/env bash
# s19 call 3 (4 GPUs): (a) the sharded optimizer keeping only its shard of the moments: the same
# bits as without on 4 and 2 GPUs (p32), a stop at 100 resumed sharded (the same bits as the run
# through) and on 2 GPUs unsharded; (b) torchrun --no-python starting tt-train (the same bits as
# --gpus 2); (c) weak scaling 1/2/4 GPUs with the parts beside the backward, and per-GPU memory
# (nvidia-smi's peak, and tt-train's own) with and without --shard-optimizer; (d) four 1-GPU runs
# at once, one a GPU (no NCCL): what the host and the cards give alone.
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
tt_local_spec specs/ptb.yaml specs/p32.yaml -e "s/precision: bf16/precision: fp32/" -e "s/steps: 40000/steps: 200/" -e "s/eval_interval: 1000/eval_interval: 0/"
tr() { # tr NAME ARGS...: tt-train specs/p32.yaml ARGS, its log-json in $L/NAME.json
  local n=$1; shift
  timeout 120 $T specs/p32.yaml --checkpoint-dir /tmp/c-$n --log-json $L/$n.json --log-every 50 "$@" > $L/$n.log 2>&1; echo "$n rc $?"
}
same() { cmp -s $L/$1.json $L/$2.json && echo "$1 = $2: same bits" || echo "$1 vs $2: $(python3 ../cmp.py $L/$1.json $L/$2.json)"; }
# (a)
tr p4 --gpus 4
tr p4s --gpus 4 --shard-optimizer
same p4 p4s
tr p2 --gpus 2
tr p2s --gpus 2 --shard-optimizer
same p2 p2s
timeout 120 $T specs/p32.yaml --checkpoint-dir /tmp/c-p4r --gpus 4 --shard-optimizer --stop-after 100 > $L/p4r-a.log 2>&1; echo "p4r first 100 rc $?"
cp -r /tmp/c-p4r /tmp/c-p2r
timeout 120 $T specs/p32.yaml --checkpoint-dir /tmp/c-p4r --gpus 4 --shard-optimizer --resume --log-json $L/p4r.json --log-every 50 > $L/p4r.log 2>&1; echo "p4r resumed rc $?"
timeout 120 $T specs/p32.yaml --checkpoint-dir /tmp/c-p2r --gpus 2 --resume --log-json $L/p2r.json --log-every 50 > $L/p2r.log 2>&1; echo "p2r resumed on 2 GPUs unsharded rc $?"
python3 - $L/p4s.json $L/p4r.json $L/p2r.json <<'PY'
import json, sys
def load(p): return {o['step']: o['loss'] for o in map(json.loads, open(p)) if 'loss' in o}
a, r, u = (load(p) for p in sys.argv[1:])
st = sorted(set(a) & set(r))
print(f"resumed sharded at 100 on 4 GPUs: steps {st[0]}..{st[-1]}, {sum(a[s] != r[s] for s in st)} of {len(st)} losses differ from the run through")
st = sorted(set(a) & set(u))
print(f"resumed unsharded on 2 GPUs: worst relative difference {max(abs(a[s]-u[s])/a[s] for s in st):.2e} over steps {st[0]}..{st[-1]}; step {st[0]} {a[st[0]]:.9f} / {u[st[0]]:.9f}")
PY
# (b)
(timeout 120 torchrun --standalone --nproc_per_node 2 --no-python $T specs/p32.yaml --checkpoint-dir /tmp/c-ptr --log-json $L/ptr.json --log-every 50 > $L/ptr.log 2>&1; echo "torchrun rc $?")
grep -m2 "^tt-train\|error" $L/ptr.log
same p2 ptr
echo "(a, b) done $(el) s"
# (c)
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w1.yaml 300
tt_txl_wt103_spec specs/t1.yaml 120
for k in 2 4; do sed -e "s/batch: 60/batch: $((60 * k))/" specs/w1.yaml > specs/w$k.yaml; sed -e "s/batch: 60/batch: $((60 * k))/" specs/t1.yaml > specs/t$k.yaml; done
run() { # run NAME SPEC ARGS...: with nvidia-smi's memory.used sampled
  local n=$1 s=$2; shift 2
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 > $L/$n.mem 2>/dev/null &
  local sm=$!
  timeout 200 $T $s --checkpoint-dir /tmp/ck-$n --log-every 20 "$@" > $L/$n.log 2>&1; local rc=$?
  kill $sm; wait $sm 2>/dev/null
  local peak=$(awk -F', ' '{ if ($2 > m[$1]) m[$1] = $2 } END { for (i in m) printf "%s%d", (n++ ? "/" : ""), m[i] }' $L/$n.mem)
  echo "$n rc $rc: $(tt_late_rate $L/$n.log) tok/s; peak MiB a GPU (nvidia-smi) $peak; $(grep -m1 '^device memory' $L/$n.log)"
  rm -rf /tmp/ck-$n
}
for m in w t; do
  run ${m}1 specs/${m}1.yaml
  run ${m}2 specs/${m}2.yaml --gpus 2
  run ${m}4 specs/${m}4.yaml --gpus 4
  run ${m}4s specs/${m}4.yaml --gpus 4 --shard-optimizer
  r1=$(tt_late_rate $L/${m}1.log)
  for k in 2 4 4s; do echo "$m $k: $(python3 -c "print(f'{$(tt_late_rate $L/${m}$k.log)/$r1:.3f}x')") one GPU's"; done
  echo "($(el) s)"
done
# (d)
for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i timeout 200 $T specs/w1.yaml --checkpoint-dir /tmp/ck-ind$i --log-every 20 > $L/ind$i.log 2>&1 & done
wait
echo "four 1-GPU wt103 runs at once: $(for i in 0 1 2 3; do tt_late_rate $L/ind$i.log; done | tr '\n' ' ') tok/s"
echo "total $(el) s"
gzip -f $L/*.log $L/*.mem
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
