#!/usr/bin/env bash
# Everything that needs the GPU, in one call of the device tool: build, the GPU tests against the
# CPU reference, compute-sanitizer on the kernel tests, ttgen picking the device's architecture,
# then a table. On the GPU machine libyaml and CMocka are missing: carry the .debs that
# ../shared/scripts/fetch-debs.sh .deps downloads (device tool: carry: [".deps"]); this script
# unpacks them and points CMake and the loader at them.
#   bench/gpu-check.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/tt-gpu-check}}
mkdir -p "$out"
. bench/gpu-env.sh
summary=()
step() { # name, command...
    local name=$1
    shift
    local t0=$(date +%s.%N)
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    local dt=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
    summary+=("$(printf '%-28s %-6s %6s s' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL:$rc)" "$dt")")
    tail -n 40 "$out/$name.log"
    return $rc
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
step build bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16' || { printf '%s\n' "${summary[@]}"; exit 1; }
step gpu-tests ctest --test-dir build-gpu -L gpu --output-on-failure -V
step memcheck compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
# racecheck: our kernels only (it reports cuBLAS's split-K kernel), and the small cases (it is slow)
step racecheck env TT_TEST_CONFIGS=odd TT_TEST_NO_CUBLAS=1 compute-sanitizer --tool racecheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
step ttgen-device-arch bash -c 'build-gpu/ttgen specs/wt103.yaml --cache-dir /tmp/tt-cache-arch | grep -A1 "^kernels for"'
echo
echo "== summary ($(head -2 "$out/gpu.txt" | tail -1))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
