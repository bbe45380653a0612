#!/usr/bin/env bash
# s27 call 1 (1 GPU), measurement only at 03ebf9d: where a step goes now, per kernel (Nsight
# Compute, bench/profile-step.sh) for wt103 and lm1b's body, tt-bench --profile for lm1b's body,
# and Nsight's full sections for the wt103 attention kernels (tt-attn-bench, one launch each).
#   bash bench/raw/2026-12-03-s27/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16 --target tt-train tt-bench tt-attn-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
timeout 150 bash bench/profile-step.sh $L/wt103 wt103 > $L/wt103.txt 2>&1
echo "wt103 profile rc $? ($(el) s)"; tail -28 $L/wt103.txt
timeout 120 bash bench/profile-step.sh $L/lm1b lm1b-body > $L/lm1b.txt 2>&1
echo "lm1b profile rc $? ($(el) s)"; tail -28 $L/lm1b.txt
tt_lm1b_body_spec specs/p-lm1b.yaml 200
timeout 60 build-gpu/tt-bench specs/p-lm1b.yaml --profile > $L/lm1b-prof.txt 2>&1
echo "lm1b tt-bench --profile rc $? ($(el) s)"; head -16 $L/lm1b-prof.txt
timeout 60 build-gpu/ttgen specs/p-lm1b.yaml > $L/lm1b-ttgen.txt 2>&1
grep -E "^  [a-z]|strategy" $L/lm1b-ttgen.txt | head -60
rm -f specs/p-lm1b.yaml
timeout 150 ncu --set full -k regex:'^mla_' -c 8 --clock-control none \
    build-gpu/tt-attn-bench specs/wt103.yaml --iters 1 > $L/ncu-attn.txt 2> $L/ncu-attn.err
echo "ncu attn rc $? ($(el) s)"
grep -E '^  mla_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Compute \(SM\) Throughput|Memory Throughput' $L/ncu-attn.txt | head -120
echo "total $(el) s"
rm -rf $L/wt103/ncu-step.csv $L/lm1b/ncu-step.csv
gzip -f $L/*.log $L/*.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
