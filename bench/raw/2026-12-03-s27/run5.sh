#!/usr/bin/env bash
# s27 call 5 (1 GPU): c1ee1fa's review edits (the side stream decided before the arena is carved)
# under test_gpu_model, whose graph test runs TT_OUTPUT_SIDE=0 against the default.
#   bash bench/raw/2026-12-03-s27/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16 --target test_gpu_model) > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
timeout 200 build-gpu/tests/test_gpu_model 2>&1 | grep -E "FAILED|PASSED|step 6|output on one" | head -20
