#!/usr/bin/env bash
# s23 call 5 (1 GPU): the xent kernels of lm1b's body under Nsight Compute, main's build against
# s23-xent's (builds of call 4 when still there)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build ../old/build-gpu -j8 --target tt-train) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build build-gpu -j8 --target tt-train) > $L/build.log 2>&1
wait
echo "built $(el) s"
tt_lm1b_body_spec specs/pl.yaml 200
for b in ../old/build-gpu build-gpu; do
  n=$([ $b = build-gpu ] && echo ours || echo base)
  rm -rf /tmp/ck-n
  timeout 120 ncu -k regex:xent --launch-skip 4 --launch-count 6 --clock-control none --csv \
    --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,smsp__average_warp_latency_issue_stalled_barrier \
    $b/tt-train specs/pl.yaml --checkpoint-dir /tmp/ck-n --stop-after 4 -q > $L/ncu-$n.csv 2> $L/ncu-$n.err
  echo "$n rc $? ($(el) s)"
  python3 - $L/ncu-$n.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; k = h.index("Kernel Name"); m = h.index("Metric Name"); v = h.index("Metric Value"); i = h.index("ID")
for r in rows[1:]:
    print(r[i], r[k].split("(")[0][:40], r[m], r[v])
PY
done
rm -f specs/pl.yaml
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
