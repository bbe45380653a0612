#!/usr/bin/env bash
# Issue 5's benchmark, in one call on the GPU machine: training tokens/s of our Transformer-XL
# (tt-train, bf16, the trainer's steady rate) against bench/torch_txl.py's (the same model in
# PyTorch: eager with bf16 autocast, and torch.compile), for specs/txl-ptb.yaml (on PTB) and
# specs/txl-wt103-base.yaml (16 x 410, N = M = 150, batch 60; on bench/zipf_corpus.py's
# synthetic corpus of wt103's vocabulary, as bench/wt103-bench.sh), with peak memory beside.
#   bench/txl-bench.sh OUTDIR    (after build-gpu/ is built; PTB from .data/ptb)
#   TXL_BENCH=ptb|wt103 runs one of the two; PEER_STEPS (default 30) steps the peer times;
#   PEER_COMPILE=0 leaves out the compiled peer (txl-wt103-base's compiles for minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/txl-bench.sh OUTDIR}
mkdir -p "$out"
. bench/gpu-env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
peer_steps=${PEER_STEPS:-30}
status=0
rows=()
bench() { # name spec steps values
    local name=$1 spec=$2 steps=$3 values=$4
    rm -rf /tmp/ck-txl-bench
    build-gpu/tt-train "$spec" --checkpoint-dir /tmp/ck-txl-bench --log-every $((steps / 10)) \
        > "$out/$name-ours.log" 2>&1 || { tail "$out/$name-ours.log"; status=1; return; }
    local ours mem
    ours=$(tt_steady_rate "$out/$name-ours.log")
    mem=$(grep -o 'device memory: [0-9.]* [MG]iB' "$out/$name-ours.log" | head -1 | cut -d' ' -f3-)
    rows+=("$(printf '%-14s %-36s %12s %14s' "$name" "ours tt-train bf16 ($steps steps)" "$ours" "$mem")")
    local modes=("--bf16")
    [ "${PEER_COMPILE:-1}" = 0 ] || modes+=("--compile --bf16")
    for mode in "${modes[@]}"; do
        python3 bench/torch_txl.py time "$values" $mode --steps "$peer_steps" > "$out/$name-peer.log.tmp" 2>&1 ||
            { tail "$out/$name-peer.log.tmp"; status=1; continue; }
        cat "$out/$name-peer.log.tmp" >> "$out/$name-peer.log"
        local line tps pk
        line=$(grep '^peer txl' "$out/$name-peer.log.tmp" | tail -1)
        tps=$(echo "$line" | grep -o '[0-9]* tokens/s' | cut -d' ' -f1)
        pk=$(echo "$line" | grep -o 'peak memory [0-9.]* MiB' | cut -d' ' -f3-)
        rows+=("$(printf '%-14s %-36s %12s %14s %8s' "$name" "peer ${line#peer txl }" "$tps" "$pk" \
            "$(awk -v a="$ours" -v b="$tps" 'BEGIN { if (b > 0) printf "%.2fx", a / b }')")")
    done
    rm -f "$out/$name-peer.log.tmp"
}
if [ "${TXL_BENCH:-ptb}" = ptb ] || [ -z "${TXL_BENCH:-}" ]; then
    tt_local_spec specs/txl-ptb.yaml specs/txl-bench-ptb.yaml -e "s/steps: 40000/steps: 15000/" \
        -e "s/eval_interval: 1000/eval_interval: 0/"
    # V,D,L,H,DH,N,M,F,B,dropout,dropatt,clamp,EVAL_N,EVAL_M,EVAL_CLAMP of txl-ptb.yaml
    bench txl-ptb specs/txl-bench-ptb.yaml 15000 "10000,256,3,8,32,32,32,2100,32,0.3,0.0,0,32,32,0"
    rm -f specs/txl-bench-ptb.yaml
fi
if [ "${TXL_BENCH:-wt103}" = wt103 ] || [ -z "${TXL_BENCH:-}" ]; then
    [ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
    tt_txl_wt103_spec specs/txl-bench-wt103.yaml 300
    bench txl-wt103-base specs/txl-bench-wt103.yaml 300 \
        "267735,410,16,10,41,150,150,2100,60,0.1,0.0,0,64,640,400,20000:40000:200000,1,true"
    rm -f specs/txl-bench-wt103.yaml
fi
rm -rf /tmp/ck-txl-bench
{
    echo
    echo "== Transformer-XL training throughput on $gpu (tokens/s; x = ours / the peer's)"
    printf '%-14s %-36s %12s %14s %8s\n' spec run tokens/s memory x
    printf '%s\n' "${rows[@]}"
} | tee "$out/table.txt"
exit $status
