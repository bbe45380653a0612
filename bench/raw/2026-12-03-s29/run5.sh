#!/usr/bin/env bash
# s29 call 5 (1 GPU, the session's last ~80 s), on the branch s29-cluster-cols: its units against
# their CPU twins at the wt103 configs only (TT_TEST_CONFIGS=wt103, no tuner variants).
#   bash bench/raw/2026-12-03-s29/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON > /dev/null &&
 cmake --build build-gpu -j16 --target test_gpu_kernels) > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
TT_TEST_CONFIGS=wt103 TT_TEST_NO_VARIANTS=1 timeout 45 build-gpu/tests/test_gpu_kernels > $OUT/kernels.log 2>&1
echo "test_gpu_kernels rc $?"
grep -E "cluster_cols|FAILED|PASSED|NOT CAUGHT|error" $OUT/kernels.log | head -30
