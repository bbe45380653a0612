#!/usr/bin/env bash
# s38 call 2 (1 GPU), on s37-profile-ops: test_bench_cli's test_profile (tt-bench --profile's
# kernels by op, now read through the driver's cuGraphKernelNodeGetParams_v2 and cuFuncGetName
# after s38 call 1 found every kernel under "cuBLAS and others"); no more (the session's last
# ~280 s of device time).
#   bash bench/raw/2026-12-07-s38/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 60 env TT_TEST_ONLY=test_profile build-gpu/tests/test_bench_cli > $L/bench-cli.log 2>&1
echo "test_bench_cli (profile) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|by op|kernels" $L/bench-cli.log | tail -8
tt_call_end
