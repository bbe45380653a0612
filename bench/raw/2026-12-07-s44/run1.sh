#!/usr/bin/env bash
# The forty-fourth session's first call (1 GPU), on s44-switches (main with the materialized
# attention's switches read once at load): every kernel of one wt103 step alone under Nsight
# Compute (bench/profile-step.sh; the CSV comes back for the launch order), the switches' GPU
# tests (test_gpu_kernels' mat configs, test_step, test_graph), then Nsight Compute's sections
# for the attention kernels at the wt103 shapes.
#   bash bench/raw/2026-12-07-s44/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 220 bench/profile-step.sh $L/wt103 wt103 > /dev/null 2>&1; echo "profile-step wt103 rc $? ($(tt_el) s)"
head -32 $L/wt103/step-breakdown.txt 2>/dev/null; tail -1 $L/wt103/step-breakdown.txt 2>/dev/null
tt_gpu_test kernels-mat 90 "FAILED|PASSED|ERROR|SKIPPED" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 60 "FAILED|PASSED|ERROR|materialized" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 40 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
if [ $(tt_el) -lt 470 ]; then
    timeout $((560 - $(tt_el))) ncu --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats --section SchedulerStats -k regex:'^mla_' -c 8 --clock-control none \
        build-gpu/tt-attn-bench specs/wt103.yaml --iters 1 > $L/ncu-attn.txt 2> $L/ncu-attn.err
    echo "ncu attn rc $? ($(tt_el) s)"
    grep -E '^  mla_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Grid Size|Block Size|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Warp Cycles Per Issued' $L/ncu-attn.txt | head -90
fi
tt_call_end
