#!/usr/bin/env bash
# Issue 17's strategy per shape, confirmed by measurement: at each point, the training step's
# CUDA graph replayed back to back (tt-bench --profile's replay_ms: the GPU's time alone, free of
# the host's between steps, which a pipelined trainer hides) and its attention's share, with the
# tensorized attention fused and with it materialized (`kernels.attention`), beside the strategy
# the plan takes under `auto` and the cost model's estimates a layer (ttgen's note).
#   bench/strategy-check.sh OUTDIR POINT...   (repo root, on the GPU machine, after build-gpu/)
# POINT: a point of bench/grid-bench.sh's grid by name (d256-n160-r40-c2; one off the grid, such
# as d320-n48-r24-c3, too), or ptb, ptb-b120 (ptb.yaml at batch 120), wt103, lm1b-body.
# OUTDIR/strategy.txt: one line a point; OUTDIR/NAME-{fused,mat}.json: tt-bench's profiles.
# Columns: the plan and the cost model's estimates (ms a layer); graph_*: the trained step's graph
# replayed (ms a step, the side stream beside: what decides "faster"); one_*: the step on one
# stream (no side stream: what it adds is the difference); att_*: the attention's parts, marked.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/strategy-check.sh OUTDIR POINT..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out"
. bench/gpu-env.sh
spec_of() { # spec_of POINT DST: the point's spec, its kernels section last
    case $1 in
    ptb) tt_local_spec specs/ptb.yaml "$2" ;;
    ptb-b120) tt_local_spec specs/ptb.yaml "$2" -e "s/batch: 32/batch: 120/" ;;
    wt103) tt_local_spec specs/wt103.yaml "$2" && printf 'kernels:\n  arch: auto\n' >> "$2" ;; # vocabulary given: no data read
    lm1b-body) tt_lm1b_body_spec "$2" 200 && printf 'kernels:\n  arch: auto\n' >> "$2" ;;
    *) bench/grid-bench.sh --specs /tmp/strategy-specs "$1" > /dev/null &&
        tt_local_spec /tmp/strategy-specs/grid-$1.yaml "$2" ;;
    esac
}
printf '%-20s %-13s %9s %9s %10s %10s %9s %9s %9s %9s %s\n' point plan est_fused est_mat graph_fused \
    graph_mat one_fused one_mat att_fused att_mat "faster" | tee "$out/strategy.txt"
for p in "$@"; do
    base=specs/strategy-$p.yaml
    if ! spec_of "$p" "$base" || ! tail -2 "$base" | grep -q '^  arch: auto$'; then
        echo "$p: no spec with its kernels section last" | tee -a "$out/strategy.txt"
        continue
    fi
    note=$(build-gpu/ttgen "$base" 2>&1 | grep -m1 -oE 'strategy [a-z]+: auto: [^;]*')
    plan=$(echo "$note" | awk '{print $2}' | tr -d :)
    est=$(echo "$note" | grep -oE '[0-9.e-]+ ms a layer [a-z]+ against [0-9.e-]+ ms [a-z]+')
    # est: "A ms a layer S1 against B ms S2": the fused one and the materialized one
    ef=$(echo "$est" | awk '{print ($5 == "fused") ? $1 : $7}')
    em=$(echo "$est" | awk '{print ($5 == "fused") ? $7 : $1}')
    for k in fused materialized; do
        { cat "$base"; echo "  attention: $k"; } > specs/strategy-$p-$k.yaml
        timeout 240 build-gpu/tt-bench specs/strategy-$p-$k.yaml --profile --json \
            > "$out/$p-${k:0:5}.json" 2> "$out/$p-${k:0:5}.err" ||
            echo "$p $k: tt-bench --profile rc $? ($(tail -1 "$out/$p-${k:0:5}.err"))"
        rm -f specs/strategy-$p-$k.yaml
    done
    rm -f "$base"
    python3 - "$p" "${plan:-?}" "${ef:-nan}" "${em:-nan}" "$out/$p-fused.json" "$out/$p-mater.json" <<'PY' | tee -a "$out/strategy.txt"
import json, math, sys
p, plan, ef, em, ff, fm = sys.argv[1:7]
def load(f):
    try:
        j = json.load(open(f))
    except Exception:
        return math.nan, math.nan, math.nan
    att = [r["ms"] for r in j["roles"] if r["role"] == "attention"]
    return (j.get("replay_ms", math.nan), j.get("one_stream_ms", math.nan),
            att[0] if att else math.nan)
sf, of, af = load(ff)
sm, om, am = load(fm)
faster = "fused" if sf < sm else "materialized" if sm < sf else "?"
agree = "" if faster == "?" or plan == "?" else (" (plan agrees)" if faster == plan else " (plan differs)")
print("%-20s %-13s %9s %9s %10.4f %10.4f %9.4f %9.4f %9.4f %9.4f %s by %.3fx%s" % (
    p, plan, ef, em, sf, sm, of, om, af, am, faster, max(sf, sm) / min(sf, sm) if sf > 0 and sm > 0 else math.nan, agree))
PY
done
