#!/usr/bin/env bash
# The gradients summed over several GPUs in bf16 (TT_NCCL_SUMS=bf16, half the bytes) against fp32,
# in one call on a host of K GPUs (GPUS=K, default 4): the cast_widen unit against the CPU
# (test_gpu_kernels); weak scaling on the wt103 shapes (60 sequences a GPU), 1 GPU and K with fp32
# and bf16 sums, twice, alternating, and K with bf16 sums and --shard-optimizer; the bf16 sums'
# losses against one GPU's at the same global batch (60 K) over 200 steps, beside the fp32 sums';
# the same bf16 run twice for the same bits; and txl-wt103-base's weak scaling with both.
# TXL=0 leaves txl-wt103-base out; TT_TEST_CONFIGS (test_gpu_kernels') runs the units of some
# configs alone.
#   [GPUS=K] [TXL=0] bench/sums-bench.sh OUTDIR     (from the repository's root; builds build-gpu/)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/sums-bench.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
export NCCL_NVLS_ENABLE=0
K=${GPUS:-4}
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
  cmake --build build-gpu -j32 --target tt-train test_gpu_kernels; } > "$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log"; exit 1; }
echo "built ($(el) s)"
(cd build-gpu && ctest -R test_gpu_kernels --output-on-failure) > "$out/kernels.log" 2>&1
echo "test_gpu_kernels rc $? ($(el) s)"; grep -E "cast_widen|tests passed|FAIL" "$out/kernels.log" | head -5
T=build-gpu/tt-train
[ -f "$tt_wt103_data/train.txt" ] || tt_wt103_corpus > "$out/corpus.txt"
tt_wt103_spec specs/sw1.yaml 300
sed -e "s/batch: 60/batch: $((60 * K))/" specs/sw1.yaml > specs/sw4.yaml
grep -q "batch: $((60 * K))" specs/sw4.yaml || { echo "specs/sw4.yaml: no batch $((60 * K))"; exit 1; }
rate() { tt_late_rate "$1"; }
for rep in 1 2; do
    timeout 150 $T specs/sw1.yaml --checkpoint-dir /tmp/sb1 --log-every 20 > "$out/w1-$rep.log" 2>&1
    for sums in fp32 bf16; do
        TT_NCCL_SUMS=$sums timeout 150 $T specs/sw4.yaml --gpus $K --checkpoint-dir /tmp/sb4 \
            --log-every 20 > "$out/w4-$sums-$rep.log" 2>&1 || echo "$K GPUs $sums rc $?"
    done
    r1=$(rate "$out/w1-$rep.log"); rf=$(rate "$out/w4-fp32-$rep.log"); rb=$(rate "$out/w4-bf16-$rep.log")
    echo "wt103 weak scaling, run $rep: 1 GPU $r1 tok/s; $K GPUs fp32 sums $rf ($(python3 -c \
"print(f'{$rf/$r1:.3f}x')")), bf16 sums $rb ($(python3 -c "print(f'{$rb/$r1:.3f}x')")) ($(el) s)"
done
TT_NCCL_SUMS=bf16 timeout 150 $T specs/sw4.yaml --gpus $K --shard-optimizer --checkpoint-dir /tmp/sb4 \
    --log-every 20 > "$out/w4-bf16-shard.log" 2>&1 || echo "$K GPUs bf16 sharded rc $?"
echo "wt103, $K GPUs, bf16 sums, --shard-optimizer: $(rate "$out/w4-bf16-shard.log") tok/s ($(el) s)"
# the trajectory: one GPU at batch 60 K against K GPUs with each kind of sums, 200 steps
sed -e "s/steps: 300/steps: 200/" specs/sw4.yaml > specs/sl.yaml
timeout 200 $T specs/sl.yaml --checkpoint-dir /tmp/sl1 --log-json "$out/sl-1.json" --log-every 1 > "$out/sl-1.log" 2>&1
for sums in fp32 bf16 bf16; do
    n=$(ls "$out"/sl-4-$sums*.json 2>/dev/null | wc -l)
    TT_NCCL_SUMS=$sums timeout 150 $T specs/sl.yaml --gpus $K --checkpoint-dir /tmp/sl4 \
        --log-json "$out/sl-4-$sums-$n.json" --log-every 1 > "$out/sl-4-$sums-$n.log" 2>&1
done
for f in "$out"/sl-4-fp32-0.json "$out"/sl-4-bf16-0.json; do
    python3 - "$out/sl-1.json" "$f" <<'PY'
import json, sys
def load(p):
    return {o['step']: o['loss'] for o in map(json.loads, open(p)) if 'loss' in o}
a, b = load(sys.argv[1]), load(sys.argv[2])
steps = sorted(set(a) & set(b))
worst = max((abs(a[s] - b[s]) / abs(a[s]), s) for s in steps)
print(f"{sys.argv[2]}: {len(steps)} steps against 1 GPU: worst relative difference {worst[0]:.2e} "
      f"at step {worst[1]}; last {a[steps[-1]]:.6f} / {b[steps[-1]]:.6f}")
PY
done
cmp -s "$out/sl-4-bf16-0.json" "$out/sl-4-bf16-1.json" && echo "bf16 sums twice: identical logs" ||
    echo "bf16 sums twice: logs DIFFER"
# txl-wt103-base, 300 steps: a step is captured as a CUDA graph for each new tuple of a rank's
# padded cluster counts (and Transformer-XL's memory length and parity), and with K ranks a capture
# on any rank stalls them all, so K GPUs reach their steady rate later than one: at 120 steps the
# 2-GPU rate was still rising (633k, 672k, 674k, 686k, 687k tok/s a window; session 24, call 4)
[ "${TXL:-1}" = 0 ] && { rm -f specs/sw1.yaml specs/sw4.yaml specs/sl.yaml; gzip -f "$out"/*.log; exit 0; }
tt_txl_wt103_spec specs/st1.yaml 300
sed -e "s/batch: 60/batch: $((60 * K))/" specs/st1.yaml > specs/st4.yaml
timeout 200 $T specs/st1.yaml --checkpoint-dir /tmp/st1 --log-every 20 > "$out/t1.log" 2>&1
for sums in fp32 bf16; do
    TT_NCCL_SUMS=$sums timeout 200 $T specs/st4.yaml --gpus $K --checkpoint-dir /tmp/st4 \
        --log-every 20 > "$out/t4-$sums.log" 2>&1
done
r1=$(rate "$out/t1.log"); rf=$(rate "$out/t4-fp32.log"); rb=$(rate "$out/t4-bf16.log")
echo "txl-wt103-base weak scaling: 1 GPU $r1; $K GPUs fp32 sums $rf, bf16 sums $rb ($(el) s)"
rm -f specs/sw1.yaml specs/sw4.yaml specs/sl.yaml specs/st1.yaml specs/st4.yaml
gzip -f "$out"/*.log
