#!/usr/bin/env bash
# Everything that needs the GPU, in one call of the device tool: build, the GPU tests against the
# CPU reference, compute-sanitizer on the kernel tests, ttgen picking the device's architecture,
# then issue 4's benchmark (the attention alone against a materialized T, PTB training against
# the PyTorch peer, and wt103 when bench/wt103-bench.sh is there), issue 5's (Transformer-XL:
# the same perplexity as its PyTorch peer, txl-ptb's throughput) and issue 6's (tt-bench measured,
# a small sweep), and a table last. On the GPU
# machine libyaml and CMocka are missing: carry the .debs that ../shared/scripts/fetch-debs.sh
# .deps downloads (device tool: carry: [".deps", ".data"]); this script unpacks them and points
# CMake and the loader at them.
#   bench/gpu-check.sh [OUTDIR]     (TT_CHECK_ONLY=1: the checks without the benchmark;
#                                   TT_BENCH_ONLY=1: the build and the benchmark alone;
#                                   TT_BENCH_SET="attn ptb wt103 tune txl tt-bench": some of it. The
#                                   whole runs past 600 s, one device call's limit: on an H100,
#                                   checks ~80 s, attn 30, ptb 115, wt103 125-240, txl 200)
# OUTDIR gets summary.txt and logs.tar.gz (every log; the device tool returns few files).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/tt-gpu-check}}
logs=$out/logs
mkdir -p "$logs"
. bench/gpu-env.sh
summary=()
finish() {
    tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
    exit "${1:-0}"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$logs/gpu.txt"
step build bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16' || { printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"; finish 1; }
if [ -z "${TT_BENCH_ONLY:-}" ]; then
step gpu-tests ctest --test-dir build-gpu -L gpu --output-on-failure -V
step memcheck env TT_TEST_NO_VARIANTS=1 compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
# the whole training step too (two streams, cuBLAS's products among our kernels)
step memcheck-step compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/test_gpu_model
# racecheck: our kernels only (it reports cuBLAS's split-K kernel), and the small cases (it is slow)
step racecheck env TT_TEST_CONFIGS=odd TT_TEST_NO_VARIANTS=1 TT_TEST_NO_CUBLAS=1 compute-sanitizer --tool racecheck --error-exitcode 3 build-gpu/tests/test_gpu_kernels
step ttgen-device-arch bash -c 'build-gpu/ttgen specs/wt103.yaml --cache-dir /tmp/tt-cache-arch | grep -A1 "^kernels for"'
fi
# TT_BENCH_SET (default all): which benchmark parts, any of attn ptb wt103 tune txl tt-bench
want() { [ -z "${TT_BENCH_SET:-}" ] || [[ " $TT_BENCH_SET " == *" $1 "* ]]; }
if [ -z "${TT_CHECK_ONLY:-}" ]; then
    # issue 6: ttgen --tune first (wt103, PTB, PTB at fp32), so that what follows runs tuned
    want tune && step tune-bench bash bench/tune-bench.sh "$logs/tune"
    want attn && step attn-bench bash -c "bash bench/attn-bench.sh $logs/attn && rm -f $logs/attn/attn.safetensors"
    want ptb && step peer-ptb bash -c "mkdir -p $logs/peer && bash bench/peer-ptb.sh $logs/peer bf16"
    want wt103 && [ -f bench/wt103-bench.sh ] && step wt103-bench bash bench/wt103-bench.sh "$logs/wt103"
    want txl && step txl-peer bash bench/txl-peer.sh "$logs/txl-peer"
    want txl && step txl-bench env TXL_BENCH=ptb bash bench/txl-bench.sh "$logs/txl-bench"
    # issue 6: tt-bench's measurements and a small sweep (ptb over rank and cores, 300 steps each)
    if want tt-bench; then
        tt_local_spec specs/ptb.yaml specs/check-sweep.yaml
        step tt-bench build-gpu/tt-bench specs/check-sweep.yaml
        step sweep build-gpu/tt-bench sweep specs/check-sweep.yaml --rank 8,40 --cores 1,2 --train-steps 300 --out "$logs/sweep"
        rm -f specs/check-sweep.yaml
    fi
fi
{
    echo
    echo "== summary ($(head -2 "$logs/gpu.txt" | tail -1))"
    printf '%s\n' "${summary[@]}"
    if [ -z "${TT_CHECK_ONLY:-}" ]; then
        echo
        echo "== benchmark (same call, same card)"
        grep -h -A7 '^attention alone' "$logs/attn-bench.log" 2>/dev/null
        echo
        echo "PTB training, bf16 (bench/peer-ptb.sh):"
        grep -h -E '^trained steps|^MFU' "$logs/peer-ptb.log" 2>/dev/null | sed 's/^/  ours: /'
        grep -h '^peer ' "$logs/peer-ptb.log" 2>/dev/null | sed 's/^/  /'
        [ -f "$logs/wt103-bench.log" ] && { echo; echo "wt103 (bench/wt103-bench.sh):"; tail -n 12 "$logs/wt103-bench.log"; }
        echo
        echo "Transformer-XL (bench/txl-peer.sh, bench/txl-bench.sh):"
        cat "$logs/txl-peer/table.txt" 2>/dev/null
        tail -n 4 "$logs/txl-bench.log" 2>/dev/null
        echo
        echo "ttgen --tune (bench/tune-bench.sh):"
        sed -n '/^== tuned against/,$p' "$logs/tune-bench.log" 2>/dev/null
        echo
        echo "tt-bench (ptb against its default Transformer-XL) and tt-bench sweep:"
        sed -n '/^measured/,/mfu_percent/p' "$logs/tt-bench.log" 2>/dev/null
        cat "$logs/sweep/sweep.csv" 2>/dev/null
    fi
} | tee "$out/summary.txt"
finish 0
