set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 50 env TT_TEST_ONLY=test_step build-gpu/tests/test_gpu_model > $L/model-step.log 2>&1
echo "test_gpu_model (step) rc $? ($(tt_el) s)"; grep -E "^  materialized|FAILED|PASSED|ERROR" $L/model-step.log | tail -9
timeout 30 env TT_TEST_ONLY=test_graph build-gpu/tests/test_gpu_model > $L/model-graph.log 2>&1
echo "test_gpu_model (graph) rc $? ($(tt_el) s)"; grep -E "tiles step 6|FAILED|PASSED|ERROR" $L/model-graph.log | tail -3
timeout $((95 - $(tt_el))) env TT_TEST_CONFIGS=mat build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1
echo "test_gpu_kernels (mat configs) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|FAILS" $L/kernels.log | head -5
tt_call_end
