#!/usr/bin/env bash
# What choosing cuBLASLt's algorithm by timing (gpu/gemm.c's choose) gains at the wt103 shapes:
# the same tt-train run of specs/wt103.yaml on the synthetic Zipf corpus with the heuristic's
# first algorithm for every product (TT_GEMM_TUNE=0) and with the fastest of its first K
# (default 8), one after the other on the same card, the second from a cache with no products
# recorded (so that it times them all); each product's times are in its log (TT_GEMM_LOG=1).
#   bench/gemm-tune.sh OUTDIR [STEPS]     (on the GPU machine, after build-gpu/ is built)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: bench/gemm-tune.sh OUTDIR [STEPS]} steps=${2:-1500}
mkdir -p "$out"
. bench/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
tt_wt103_spec specs/wt103-tune.yaml "$steps"
status=0
for tune in 0 "${TT_GEMM_TUNE:-8}"; do
    rm -rf /tmp/ck-tune
    [ "$tune" = 0 ] || sed -i '/\tgemm cublasLt /d' "$TTGEN_CACHE_DIR"/*/tuning.tsv 2>/dev/null
    TT_GEMM_TUNE=$tune TT_GEMM_LOG=1 build-gpu/tt-train specs/wt103-tune.yaml --checkpoint-dir /tmp/ck-tune \
        --log-every $((steps / 10)) > "$out/train-tune$tune.log" 2>&1 || { tail "$out/train-tune$tune.log"; status=1; }
    rate[$tune]=$(tt_steady_rate "$out/train-tune$tune.log")
    tail -n 3 "$out/train-tune$tune.log"
done
rm -rf /tmp/ck-tune specs/wt103-tune.yaml
grep '^gemm tune' "$out/train-tune${TT_GEMM_TUNE:-8}.log" | sort | uniq -c | sort -k1,1nr | head -40
echo "products timed: $(grep -c '^gemm tune' "$out/train-tune${TT_GEMM_TUNE:-8}.log")"
awk -v a="${rate[0]}" -v b="${rate[${TT_GEMM_TUNE:-8}]}" -v g="$(cat "$out/gpu.txt")" 'BEGIN {
    printf "wt103 bf16 on %s: heuristic %s tok/s, tuned %s tok/s (%.3fx)\n", g, a, b, (a > 0 ? b / a : 0) }' |
    tee "$out/table.txt"
exit $status
