#!/usr/bin/env bash
# The forty-third session's last call, on s43-land (s42-both without the gradient norm in pieces,
# with unit.c's aligned scratch): the GPU tests call 1 could not finish (test_gpu_kernels' mat
# configs, aborted by the harness's misaligned partials), test_step and test_graph, then the
# kernel tests' default configs while the call's time lasts, and one lm1b body run.
#   bash bench/raw/2026-12-07-s43/run13.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test kernels-mat 90 "FAILED|PASSED|ERROR|SKIPPED" test_gpu_kernels TT_TEST_CONFIGS=mat
tt_gpu_test model-step 60 "FAILED|PASSED|ERROR|materialized" test_gpu_model TT_TEST_ONLY=test_step
tt_gpu_test model-graph 40 "FAILED|PASSED|ERROR|differ" test_gpu_model TT_TEST_ONLY=test_graph
tt_lm1b_body_spec specs/t-lm1b.yaml 300
rm -rf /tmp/ck-t
timeout 40 build-gpu/tt-train specs/t-lm1b.yaml --checkpoint-dir /tmp/ck-t --log-every 50 > $L/lm1b-land.log 2>&1
echo "lm1b land: rc $? late $(tt_late_rate $L/lm1b-land.log) tok/s; $(grep 'valid ppl' $L/lm1b-land.log | tail -1 | grep -o 'valid ppl [0-9.]*')"
tt_gpu_test kernels-default 80 "FAILED|PASSED|ERROR|SKIPPED" test_gpu_kernels
rm -f specs/t-*.yaml
tt_call_end
