#!/usr/bin/env bash
# s29 call 2 (1 GPU), on the branch s29-ffn-mm: test_gpu_kernels with ffn_mm_bwd's block rows
# over every PARTS-th row tile (call 1's run stopped at a check config with more rows than the
# plan's); then why ffn_mm is slow: Nsight Compute's sections on one launch each of ffn_mm_fwd
# and ffn_mm_bwd in a wt103 step, and the step's kernels alone (bench/profile-step.sh).
#   bash bench/raw/2026-12-03-s29/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
timeout 260 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "ffn_mm|FAILED|PASSED|NOT CAUGHT|ERROR|error" $L/kernels.log | head -40
spec=specs/s29-wt103.yaml
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
tt_wt103_spec "$spec" 200000
rm -rf /tmp/ck29; build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck29 --stop-after 30 -q > $L/warm.log 2>&1
rm -rf /tmp/ck29
timeout 150 ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis -k regex:'^ffn_mm' -s 24 -c 2 \
    build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck29 --stop-after 3 -q > $L/ncu-ffn.txt 2>&1
echo "ncu rc $? ($(el) s)"
grep -E "ffn_mm_|Duration|Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Warp|No Eligible|Stall|Shared Memory Configuration|Dynamic Shared|Waves" $L/ncu-ffn.txt | head -70
rm -rf /tmp/ck29 "$spec"
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
