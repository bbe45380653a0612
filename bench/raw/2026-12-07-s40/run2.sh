#!/usr/bin/env bash
# Fortieth session, second call (1 GPU), on main after the merge of s40-tiles: the GPU tests that
# touch what the merge brought, on the merged code: the materialized units (every tile count),
# the whole step and the graph modes with tiles, and test_profile.
#   bash bench/raw/2026-12-07-s40/run2.sh   (repo root, on the GPU machine; carry .deps)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels 120 "FAILED|PASSED|NOT CAUGHT|ERROR|FAILS" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 100 "^  materialized|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 90 "tiles step 6|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_graph
tt_gpu_test bench-cli 60 "FAILED|PASSED|ERROR|one stream" test_bench_cli TT_TEST_ONLY=test_profile
tt_call_end
