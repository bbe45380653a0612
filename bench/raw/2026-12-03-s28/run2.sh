#!/usr/bin/env bash
# s28 call 2 (1 GPU): a timing probe (branch probe-overlap, never for main: its weights are
# wrong on purpose): the embedding's Adam (68.5M of wt103's 85.3M parameters) run on the side
# stream beside the layers' forward (with TT_PROBE_OVERLAP=B blocks), the rest of Adam at the
# step's end; 0 = today's step; TT_PROBE_PRIO=1: on a stream of the lowest priority. Asks: how much of the 0.57 ms would hide beside the forward?
#   bash bench/raw/2026-12-03-s28/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null &&
 cmake --build build-gpu -j16 --target tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
tt_wt103_spec specs/goal-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/goal-ptb-b120.yaml -e "s/batch: 32/batch: 120/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
run() { # name probe rep [prio]
    local log=$L/$1-p$2-$3${4:+-low}.log
    rm -rf /tmp/ck-goal
    TT_PROBE_PRIO=${4:-0} TT_PROBE_OVERLAP=$2 timeout 120 build-gpu/tt-train specs/goal-$1.yaml --checkpoint-dir /tmp/ck-goal --log-every 20 > $log 2>&1
    echo "$1 probe $2${4:+ low-priority} rep $3: rc $? late $(tt_late_rate $log) tok/s"
}
for rep in 1 2; do
  for pb in 0 132 264 1056 8192; do run wt103 $pb $rep; done
  for pb in 264 8192; do run wt103 $pb $rep 1; done
  for pb in 0 264 8192; do run ptb-b120 $pb $rep; done
done
echo "total $(el) s"
rm -f specs/goal-*.yaml
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
