#!/usr/bin/env bash
# s34 call 4 (1 GPU), branch s34-ffn-pipe (v4): where ffn_in_fwd's and ffn_in_bwd's time goes,
# ncu's full set on one launch of each in a wt103 step (stall reasons, memory, pipes).
#   bash bench/raw/2026-12-06-s34/run4.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
tt_wt103_spec specs/s34-wt103.yaml 600
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
rm -rf /tmp/ck-ncu
timeout 150 ncu --set full -k regex:'ffn_in' -s 12 -c 2 -o $L/ffn \
    build-gpu/tt-train specs/s34-wt103.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 4 -q > $L/ncu.log 2>&1
echo "ncu rc $? ($(el) s)"; tail -3 $L/ncu.log
ncu --import $L/ffn.ncu-rep --page details > $L/details.txt 2>&1
grep -E "ffn_in_|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Block Limit|Grid Size|Threads|Stall|One or More" $L/details.txt | head -60
ncu --import $L/ffn.ncu-rep --page raw --csv 2>/dev/null | python3 -c "
import csv,sys
r=list(csv.reader(sys.stdin)); h=r[0]
for row in r[2:]:
  print(row[h.index('Kernel Name')][:40])
  st=[(h[i],row[i]) for i in range(len(h)) if h[i].startswith('smsp__average_warp_latency_issue_stalled') or h[i].startswith('smsp__pcsamp_warps_issue_stalled')]
  st=[(k,float(v.replace(',',''))) for k,v in st if v.replace(',','').replace('.','').isdigit()]
  for k,v in sorted(st,key=lambda x:-x[1])[:12]: print('   ',k[:90],v)
" 2>&1 | head -40
rm -f specs/s34-wt103.yaml
echo "total $(el) s"
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
