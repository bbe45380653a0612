#!/usr/bin/env bash
# Forty-first session, first call (1 GPU), on branch s40-review (main + the review: the tiles'
# rows buffer only where the products run in tiles; the one-stream step timed by tt_gpu_median_ms):
# its GPU tests, then the fortieth session's run5 (lm1b's body's 200-step validation perplexity
# under several realizations of the same function: one product, 2 and 3 tiles, side stream off,
# cublasGemmEx instead of cuBLASLt, the fused attention).
#   bash bench/raw/2026-12-07-s41/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels 120 "FAILED|PASSED|NOT CAUGHT|ERROR|FAILS" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 100 "^  materialized|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 90 "tiles step 6|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test model-footprint 60 "FAILED|PASSED|ERROR|bytes" test_gpu_model TT_TEST_ONLY=test_footprint
tt_gpu_test bench-cli 60 "FAILED|PASSED|ERROR|one stream" test_bench_cli TT_TEST_ONLY=test_profile
sed -e '/^tt_call_begin/d' -e '/^tt_build_gpu/d' -e '/^tt_call_end/d' \
    bench/raw/2026-12-07-s40/run5.sh > $OUT/run5-body.sh
. $OUT/run5-body.sh
tt_call_end
