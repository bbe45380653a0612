#!/usr/bin/env bash
# s28 call 4 (1 GPU): test_gpu_kernels and test_gpu_model at main's code (= a4febd7's: mla_fwd on
# three slabs, the backward kernels at 6fd45cb's), the one combination not yet under
# test_gpu_kernels.   bash bench/raw/2026-12-03-s28/run4.sh   (repo root; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16 --target test_gpu_kernels test_gpu_model) > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
timeout 200 build-gpu/tests/test_gpu_kernels > /tmp/kernels.log 2>&1; echo "test_gpu_kernels rc $?"
grep -E "FAILED|PASSED" /tmp/kernels.log | tail -4
timeout 100 build-gpu/tests/test_gpu_model > /tmp/model.log 2>&1; echo "test_gpu_model rc $?"
grep -E "FAILED|PASSED" /tmp/model.log | tail -3
