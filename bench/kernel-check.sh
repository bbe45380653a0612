#!/usr/bin/env bash
# Issue 16's checks on the GPU, in one call of the device tool: the build, the GPU tests (every
# unit against its CPU twin on the hand-written configs, on the plan of every spec in specs/ and
# on every variant the tuner may choose; the planted errors, each of which must fail its check;
# mla_bwd twice with the same bits; the whole training step), TT_TEST_SEEDS seeds of the whole
# step (default 200), ttgen --tune on ptb, compute-sanitizer's memcheck and racecheck on the
# kernels, and the attention alone timed against a baseline build (BASE, a commit or folder: by
# default the device copy's git HEAD, the last landed commit), alternating, on the same card.
# Carry the .debs of ../shared/scripts/fetch-debs.sh .deps (see bench/gpu-env.sh).
#   bench/kernel-check.sh OUTDIR        (TT_SKIP="model seeds tune sanitize attn": leave those out;
#                                       TT_WERROR=OFF: warnings not errors)
# OUTDIR gets summary.txt and logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/tt-kernel-check}}
logs=$out/logs
mkdir -p "$logs"
. bench/gpu-env.sh
summary=()
export TT_STEP_TAIL=25
skip() { [[ " ${TT_SKIP:-} " == *" $1 "* ]]; }
finish() {
    {
        echo
        echo "== summary ($(tail -1 "$logs/gpu.txt"))"
        printf '%s\n' "${summary[@]}"
    } | tee "$out/summary.txt"
    tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
    exit "${1:-0}"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$logs/gpu.txt"
step build bash -c "cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_WERROR=${TT_WERROR:-ON} && cmake --build build-gpu -j16" || finish 1
step test-gpu-kernels build-gpu/tests/test_gpu_kernels
skip model || step test-gpu-model build-gpu/tests/test_gpu_model
if ! skip model && ! skip seeds; then
    step whole-step-seeds timeout ${TT_SEEDS_TIMEOUT:-400} env TT_TEST_SEEDS=${TT_TEST_SEEDS:-200} build-gpu/tests/test_gpu_model
fi
# the tuner through the units: every variant of ptb's tunable kernels checked, timed, chosen
skip tune || step tune build-gpu/ttgen specs/ptb.yaml --tune --cache-dir /tmp/tt-tune-check
if ! skip sanitize; then
    step memcheck env TT_TEST_CONFIGS=odd TT_TEST_NO_VARIANTS=1 compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
    step racecheck env TT_TEST_CONFIGS=odd TT_TEST_NO_VARIANTS=1 TT_TEST_NO_CUBLAS=1 compute-sanitizer --tool racecheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
fi
if ! skip attn; then
    # the baseline: BASE built beside, its tt-attn-bench alternated with ours, three times
    base=${BASE:-}
    if [ -z "$base" ] && git rev-parse HEAD > /dev/null 2>&1; then
        rm -rf /tmp/tt-base && git worktree add -f /tmp/tt-base HEAD > /dev/null 2>&1 && base=/tmp/tt-base
    fi
    if [ -n "$base" ]; then
        step build-base bash -c "cmake -S $base -B /tmp/tt-base-build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=OFF && cmake --build /tmp/tt-base-build -j16 --target tt-attn-bench"
        echo "baseline: $(git -C "$base" log --oneline -1 2>/dev/null)" | tee "$logs/attn.log"
        for round in 1 2 3; do
            for who in base ours; do
                bin=build-gpu/tt-attn-bench
                [ $who = base ] && bin=/tmp/tt-base-build/tt-attn-bench
                TT_TUNE=0 TTGEN_CACHE_DIR=/tmp/tt-cache-$who $bin specs/wt103.yaml --iters 100 2>&1 |
                    grep -E '^  (forward|backward|forward\+backward) ' | sed "s/^/$who round $round: /" | tee -a "$logs/attn.log"
            done
        done
        summary+=("$(grep 'forward+backward' "$logs/attn.log" | awk '{print $1, $4, $5}' | tr '\n' ';')")
    fi
fi
finish 0
