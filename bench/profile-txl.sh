#!/usr/bin/env bash
# Detail for tuning Transformer-XL's fused attention, in one call on the GPU machine: Nsight
# Compute's full sections for one launch each of txl_attn_fwd, txl_attn_bwd_q and
# txl_attn_bwd_kv, and the kernels around them (heads, dR's sum), in a txl-wt103-base training step (the
# zipf corpus; the launches after the first steps' product timing), with the lines that say why a
# kernel waits (occupancy and what limits it, registers, warp stalls, pipe use, bank conflicts).
#   bench/profile-txl.sh OUTDIR     (on the GPU machine, after build-gpu/ is built)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/profile-txl.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
spec=specs/txl-profile.yaml
tt_txl_wt103_spec "$spec" 200000
rm -rf /tmp/ck-profile-txl
# one launch of each, past the first step (16 layers a step)
for k in txl_attn_fwd txl_attn_bwd_q txl_attn_bwd_kv txl_heads_qkv txl_dr_sum; do
    rm -rf /tmp/ck-profile-txl
    ncu --set full -k regex:"^$k" --launch-skip 20 --launch-count 1 --clock-control none \
        build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck-profile-txl --stop-after 3 -q \
        > "$out/ncu-$k.txt" 2> "$out/ncu-$k.err"
done
rm -f "$spec"
grep -E '^  txl_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Shared.*Bank|L1/TEX Hit|Compute \(SM\) Throughput|Memory Throughput|Local (Load|Store)' \
    "$out"/ncu-txl_*.txt | head -250
