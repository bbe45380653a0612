#!/usr/bin/env bash
# The fused products' first call (1 GPU), on branch s50-loss (templates/tile_k.cuh, loss.cu,
# ffn_in.cu, ffn_dz.cu, written without a GPU in the fiftieth session): their units against the CPU
# (test_loss, test_ffn_fused: each case on wgmma and on mma.sync, both reported), the kernels whose
# wgmma helpers moved into common.cuh (the attention's units at the shipped specs, test_xent),
# whole steps against the CPU reference (test_step, five new fused variants), memcheck of the two
# units. If the units pass, run2.sh (the trainings) next, on the same warm machine.
# The branch: on main, git apply bench/raw/2026-12-08-s50/s50-loss.diff (git checkout -b s50-loss
# first, and commit it there), then
# Here: bash bench/raw/2026-12-08-s50/run1.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
tt_gpu_test loss 150 "loss|  db|  nll|dlogits|FAIL|PASSED|ERROR|skipped|differs|written" test_gpu_kernels TT_TEST_ONLY=test_loss
tt_gpu_test ffn 120 "hd|dz|db1|FAIL|PASSED|ERROR|skipped|differs|padding" test_gpu_kernels TT_TEST_ONLY=test_ffn_fused
ok=$(( $(grep -c "PASSED" $L/loss.log) + $(grep -c "PASSED" $L/ffn.log) ))
tt_gpu_test step 300 "fused|FAILED|PASSED|ERROR" test_gpu_model TT_TEST_ONLY=test_step
# the rest while the call has time (600 s in all, the build's included)
late() { [ $(tt_el) -gt ${1:-450} ] && echo "skipped: $(tt_el) s gone"; }
late 420 || tt_gpu_test units 120 "FAILED|PASSED|ERROR|FAILS" test_gpu_kernels TT_TEST_ONLY=test_units_specs TT_TEST_NO_VARIANTS=1 TT_TEST_CONFIGS=wt103
late 480 || tt_gpu_test xent 40 "FAILED|PASSED|ERROR" test_gpu_kernels TT_TEST_ONLY=test_xent
for u in loss ffn_fused; do
    late 500 && continue
    TT_TEST_ONLY=test_$u timeout 90 compute-sanitizer --tool memcheck build-gpu/tests/test_gpu_kernels > $L/memcheck-$u.log 2>&1
    echo "memcheck test_$u: $(grep -E 'ERROR SUMMARY' $L/memcheck-$u.log)"
    grep -m3 -A6 "Invalid" $L/memcheck-$u.log
done
echo "tests done $(tt_el) s"
[ "$ok" = 2 ] || grep -B3 -A3 -E "FAILS|differs|written|not zero" $L/loss.log $L/ffn.log | head -80
tt_call_end
