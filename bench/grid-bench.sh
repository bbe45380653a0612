#!/usr/bin/env bash
# Issue 17 ("never slower than PyTorch at any shape"): our training throughput (tt-train, bf16)
# against the compiled PyTorch peer (bench/torch_tt.py time ... --compile --bf16) at each point
# of a grid of model shapes, both in the same call on the GPU machine (after build-gpu/ is
# built; the PTB corpus from .data/ptb there, else ../shared/data/ptb).
#
#   bench/grid-bench.sh OUTDIR [POINT...]      run the points (default: GRID_SET's, else all 22)
#   bench/grid-bench.sh --list [POINT...]      the points, their values and time estimates
#   bench/grid-bench.sh --specs DIR [POINT...] only write the points' specs into DIR (no GPU;
#                                              their data paths are specs/ptb.yaml's, which
#                                              resolve from specs/: `--specs specs`)
#   bench/grid-bench.sh --merge OUTDIR DIR...  one table from the table.csv of several runs
#
# The grid (22 points), all with 4 layers, d_inner 4 x d_model, dropout 0.1, causal, label
# smoothing 0, full softmax over PTB's 10000 words, tied weights, Adam lr 2.5e-4, clip 0.25,
# bf16, batch x seq_len = 2560 tokens a step (batch 80 at N 32, 32 at N 80, 16 at N 160):
#   base:  d_model 128, 256, 512, 1024 x seq_len 32, 80, 160, at rank 40, 2 cores (12);
#   extra: d_model 256 and 1024 at seq_len 80: rank 16 and 128 (2 cores), 1 and 4 cores
#          (rank 40), position: key (rank 40, 2 cores) (10).
# A point is named d{D}-n{N}-r{R}-c{H}[-key], e.g. d1024-n80-r40-c2. POINT arguments select
# points by name (or a shell pattern: 'd1024-*'); a name of that form that is not one of the 22
# is a point off the grid with those values, the grid's others (4 layers, F 4D, batch the
# nearest to 2560 tokens), e.g. d320-n48-r24-c3; without them, GRID_SET picks: all (default),
# base, extra, or 1, 2, 3: the grid cut in three parts of about equal estimated time, each meant
# for one device call (600 s at most).
#
# Each point: its spec written to specs/grid-NAME.yaml (and OUTDIR/specs/NAME.yaml, kept; the
# one in specs/ deleted after), `tt-train --device cuda` for GRID_STEPS steps (default 400;
# validation only at the end; a progress line every GRID_STEPS/10 steps), our steady tokens/s
# taken by tt_steady_rate (the progress lines after the first: ttgen's compile, the GEMM tuning,
# the graph capture, the final validation and checkpoint are outside it), then the peer with
# the same V,D,L,R,H,N,F,B,dropout,causal,eps for PEER_STEPS timed steps (default 100, after its
# own 10 steps of warm-up that hold torch.compile). torch_tt.py has no positional key term: at
# the -key points the peer runs without it (less work than ours: its ratio is a lower bound)
# and the row says so.
# MFU: steady tokens/s x tt-train's training FLOPs per token over the card's dense bf16 peak,
# both read from tt-train's MFU line (which itself is over the whole run's wall clock); the
# peer's MFU with the same FLOPs per token.
#
# Environment: GRID_SET (above), GRID_STEPS (400), PEER_STEPS (100), PEER_ARGS (the peer's mode,
# default "--compile --bf16"), GRID_TUNE=1 (`ttgen SPEC --tune` before each of our runs, outside
# the timing; default off: the plan's heuristics, or what an earlier --tune on this card chose),
# GRID_BUDGET_S (default 540: a point whose estimate would end the call past this many seconds
# is not started; the table lists it as not run and the command for the rest is printed),
# GRID_RUN_TIMEOUT_S (300: the limit of each run), GRID_PREWARM=K (before any timing, K points
# at a time in the background: ttgen compiles our kernels into the cache and the peer runs one
# step, which leaves torch.compile's graphs in its on-disk caches; each point's own runs then
# start warm, and only they are timed, one at a time; the estimates then take ~10 s of start-up
# for the peer instead of ~30; the prewarm's own time counts against GRID_BUDGET_S, so that a
# call's budget stays the call's: give it fewer points, as it takes minutes for many).
# OUTDIR gets gpu.txt, each run's log (NAME-ours.log, NAME-peer.log), specs/, table.txt and
# table.csv (rewritten after every point, so a call cut short keeps what it measured), and
# remaining.txt when points were left out. Exit status 1 if a run failed (the rest still run).
set -uo pipefail
here=$PWD
cd "$(dirname "$0")/.." || exit 1
abs() { case $1 in /*) echo "$1" ;; *) echo "$here/$1" ;; esac; } # OUTDIR, DIR: from the caller's folder

# the points: name D N R H position
grid_all() {
    local d n
    for d in 128 256 512 1024; do
        for n in 32 80 160; do
            echo "d$d-n$n-r40-c2 $d $n 40 2 none"
        done
    done
    for d in 256 1024; do
        echo "d$d-n80-r16-c2 $d 80 16 2 none"
        echo "d$d-n80-r128-c2 $d 80 128 2 none"
        echo "d$d-n80-r40-c1 $d 80 40 1 none"
        echo "d$d-n80-r40-c4 $d 80 40 4 none"
        echo "d$d-n80-r40-c2-key $d 80 40 2 key"
    done
}
# batch for seq_len N: 2560 tokens a step
grid_batch() { echo $(((2560 + $1 / 2) / $1)); }
# A guess of a point's seconds on an H100, from bench/peer-ptb.sh's calls (92.8 s for our 3000
# steps, an evaluation, the peer's check and four timed peer runs, two of them compiled: ~28 s
# each for 3 layers): the peer ~30 s of python start-up and torch.compile (forward, backward and
# Adam in one graph; + 3 s a core, each an einsum of its own) and its 110 steps at ~40 TFLOP/s
# of its FLOPs (the full N x N x N tensor, Wo over all N^2 columns); ours ~12 s of start-up,
# ttgen's cold compile, GEMM tuning, validation and checkpoint, and its steps at ~50 TFLOP/s of
# its FLOPs (the cost model's: causal, so about half of the N^2 terms). Each pass a token makes
# through a layer: qkv 6RD, the cores' T 2HN^2R (the peer's einsums), Wo 2N^2D, the FFN 16D^2
# (F = 4D); the softmax 2VD; training is 3 passes. The first point of a fresh machine pays more
# (cold disk caches, python's first import of torch). GRID_TUNE=1 adds ~25 s (ttgen --tune
# took 23.4 s for specs/ptb.yaml on an H200).
grid_estimate() { # D N R H
    awk -v d="$1" -v n="$2" -v r="$3" -v h="$4" -v steps="${GRID_STEPS:-400}" \
        -v psteps="${PEER_STEPS:-100}" -v tune="$([ "${GRID_TUNE:-0}" = 1 ] && echo 1)" \
        -v warm="$([ "${GRID_PREWARM:-0}" -gt 0 ] 2> /dev/null && echo 1)" 'BEGIN {
        peer_f = 3 * (4 * (6 * r * d + 2 * h * n * n * r + 2 * n * n * d + 16 * d * d) + 2 * 10000 * d)
        ours_f = 3 * (4 * (6 * r * d + h * n * n * r + n * n * d + 16 * d * d) + 2 * 10000 * d)
        ours = 12 + steps * 2560 * ours_f / 50e12
        peer = (warm ? 10 : 30 + 3 * h) + (psteps + 10) * 2560 * peer_f / 40e12
        printf "%d", ours + peer + (tune ? 25 : 0) + 0.5 }'
}
grid_sets() { # the names of GRID_SET
    case ${GRID_SET:-all} in
    all) grid_all | awk '{ print $1 }' ;;
    base) grid_all | head -n 12 | awk '{ print $1 }' ;;
    extra) grid_all | tail -n 10 | awk '{ print $1 }' ;;
    1 | 2 | 3) # greedy: the longest points first, each to the part with the least time so far
        local name d n r h pos
        grid_all | while read -r name d n r h pos; do
            echo "$(grid_estimate "$d" "$n" "$r" "$h") $name"
        done | sort -k1,1nr -k2,2 | awk -v want="$GRID_SET" '
            { best = 1; for (k = 2; k <= 3; k++) if (t[k] < t[best]) best = k
              t[best] += $1; if (best == want) print $2 }' ;;
    *) echo "grid-bench: GRID_SET is all, base, extra, 1, 2 or 3, not '$GRID_SET'" >&2; return 2 ;;
    esac
}
# the lines of grid_all for POINT... (names or patterns), else for GRID_SET; 2 on an unknown name
grid_select() {
    local names=() p found line
    if [ $# -gt 0 ]; then names=("$@"); else mapfile -t names < <(grid_sets) || return 2; fi
    [ ${#names[@]} -gt 0 ] || return 2
    for p in "${names[@]}"; do
        found=0
        while read -r line; do
            # shellcheck disable=SC2053 # a pattern on purpose
            if [[ ${line%% *} == $p ]]; then echo "$line"; found=1; fi
        done < <(grid_all)
        if [ $found = 0 ] && [[ $p =~ ^d([0-9]+)-n([0-9]+)-r([0-9]+)-c([0-9]+)(-key)?$ ]]; then
            echo "$p ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}" \
                "$([ -n "${BASH_REMATCH[5]}" ] && echo key || echo none)" # off the grid
            found=1
        fi
        if [ $found = 0 ]; then
            echo "grid-bench: no point '$p' (bench/grid-bench.sh --list shows them; an off-grid" \
                "point is named d{D}-n{N}-r{R}-c{H}[-key])" >&2
            return 2
        fi
    done | awk '!seen[$1]++'
}

# grid_spec DST NAME D N R H POS STEPS: the point's spec, its data paths as specs/ptb.yaml's
# (relative to specs/: ../../shared/data/ptb); tt_local_spec moves them to .data/ where that is.
grid_spec() {
    local dst=$1 name=$2 d=$3 n=$4 r=$5 h=$6 pos=$7 steps=$8
    cat > "$dst" << EOF
# bench/grid-bench.sh point $name (issue 17): 4 layers, d_inner 4 x d_model, batch x seq_len 2560
model:
  kind: tensorized
  vocab: 10000
  d_model: $d
  layers: 4
  rank: $r
  cores: $h
  seq_len: $n
  d_inner: $((4 * d))
  dropout: 0.1
  causal: true
  position: $pos
  tie_weights: true
train:
  batch: $(grid_batch "$n")
  steps: $steps
  optimizer: {name: adam, lr: 2.5e-4, betas: [0.9, 0.999], eps: 1.0e-8}
  schedule: {kind: cosine, warmup: 0}
  clip: 0.25
  label_smoothing: 0
  seed: 1
  precision: bf16
  eval_interval: 0
data:
  train: ../../shared/data/ptb/ptb.train.txt.gz
  valid: ../../shared/data/ptb/ptb.valid.txt
  test: ../../shared/data/ptb/ptb.test.txt
kernels:
  arch: auto
EOF
}
# the peer's SPEC_VALUES: V,D,L,R,H,N,F,B,dropout,causal,label_smoothing (full softmax)
grid_values() { echo "10000,$1,4,$3,$4,$2,$((4 * $1)),$(grid_batch "$2"),0.1,true,0"; }

# grid_table CSV...: table.txt's text from rows of table.csv (the header lines skipped)
grid_table() {
    awk -F, '
        FNR == 1 && $1 == "point" { next }
        { rows[++n] = $0 }
        END {
            printf "%-20s %5s %4s %4s %2s %-4s %3s %11s %11s %7s %6s %6s %9s %9s  %s\n", "point", "D",
                   "N", "R", "H", "pos", "B", "ours tok/s", "peer tok/s", "ratio", "MFU", "peer", "ours MiB",
                   "peer MiB", "note"
            for (k = 1; k <= n; k++) {
                split(rows[k], f, ",")
                ratio = f[10] == "" ? "-" : sprintf("%.2fx", f[10])
                printf "%-20s %5s %4s %4s %2s %-4s %3s %11s %11s %7s %6s %6s %9s %9s  %s\n", f[1], f[2],
                       f[3], f[4], f[5], f[6], f[7], f[8] == "" ? "-" : f[8], f[9] == "" ? "-" : f[9],
                       ratio, f[11] == "" ? "-" : f[11] "%", f[12] == "" ? "-" : f[12] "%",
                       f[13] == "" ? "-" : f[13], f[14] == "" ? "-" : f[14], f[17]
                if (f[10] != "") { r[++m] = f[10]; who[m] = f[1] } else missing = missing " " f[1]
            }
            if (missing != "") printf "\nno ratio (a run failed, or not run):%s\n", missing
            if (!m) { print "no point with both rates"; exit }
            for (i = 2; i <= m; i++)  # insertion sort of the ratios
                for (j = i; j > 1 && r[j] < r[j - 1]; j--) {
                    t = r[j]; r[j] = r[j - 1]; r[j - 1] = t; t = who[j]; who[j] = who[j - 1]; who[j - 1] = t }
            med = m % 2 ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
            slower = 0; for (i = 1; i <= m; i++) if (r[i] < 1) slower++
            printf "\nratio = ours / peer (steady tokens/s); %d points with both rates: median %.2fx, " \
                   "worst %.2fx at %s, best %.2fx at %s; %d point(s) slower than the peer\n",
                   m, med, r[1], who[1], r[m], who[m], slower
        }' "$@"
}

case ${1:-} in
"" | -h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    [ -n "${1:-}" ]; exit $? ;;
--list)
    shift
    pts=$(grid_select "$@") || exit 2
    total=0
    printf '%-20s %5s %4s %4s %2s %-4s %3s %5s %6s  %s\n' point D N R H pos B F est_s "peer SPEC_VALUES"
    while read -r name d n r h pos; do
        e=$(grid_estimate "$d" "$n" "$r" "$h")
        total=$((total + e))
        printf '%-20s %5s %4s %4s %2s %-4s %3s %5s %6s  %s\n' "$name" "$d" "$n" "$r" "$h" "$pos" \
            "$(grid_batch "$n")" $((4 * d)) "$e" "$(grid_values "$d" "$n" "$r" "$h")"
    done <<< "$pts"
    echo "$(wc -l <<< "$pts") points, estimated $total s (GRID_STEPS ${GRID_STEPS:-400}, PEER_STEPS ${PEER_STEPS:-100})"
    exit 0 ;;
--specs)
    dir=$(abs "${2:?usage: bench/grid-bench.sh --specs DIR [POINT...]}")
    shift 2
    pts=$(grid_select "$@") || exit 2
    mkdir -p "$dir"
    while read -r name d n r h pos; do
        grid_spec "$dir/grid-$name.yaml" "$name" "$d" "$n" "$r" "$h" "$pos" "${GRID_STEPS:-400}"
        echo "$dir/grid-$name.yaml"
    done <<< "$pts"
    exit 0 ;;
--merge)
    out=$(abs "${2:?usage: bench/grid-bench.sh --merge OUTDIR DIR...}")
    shift 2
    [ $# -gt 0 ] || { echo "usage: bench/grid-bench.sh --merge OUTDIR DIR..." >&2; exit 2; }
    mkdir -p "$out"
    csvs=()
    for d in "$@"; do
        d=$(abs "$d")
        [ -f "$d/table.csv" ] || { echo "grid-bench: no $d/table.csv" >&2; exit 2; }
        csvs+=("$d/table.csv")
    done
    # a point in several runs: its row with the most rates (ours, the peer's), the last of those
    { head -1 "${csvs[0]}"
      awk -F, 'FNR == 1 { next }
               { sc = ($8 != "") + ($9 != "")
                 if (!($1 in row) || sc >= score[$1]) { row[$1] = $0; score[$1] = sc }
                 if (!($1 in at)) { at[$1] = ++n; name[n] = $1 } }
               END { for (k = 1; k <= n; k++) print row[name[k]] }' "${csvs[@]}"; } > "$out/table.csv"
    { echo "== merged from: $*"; grep -h '^== ' "${csvs[@]/table.csv/table.txt}" 2>/dev/null | grep -v '^== merged' | awk '!seen[$0]++'
      grid_table "$out/table.csv"; } | tee "$out/table.txt"
    exit 0 ;;
-*)
    echo "grid-bench: unknown option '$1' (bench/grid-bench.sh --help)" >&2
    exit 2 ;;
esac

out=$(abs "$1")
shift
pts=$(grid_select "$@") || exit 2
mkdir -p "$out/specs" || exit 1
. bench/gpu-env.sh
steps=${GRID_STEPS:-400} peer_steps=${PEER_STEPS:-100} peer_args=${PEER_ARGS:---compile --bf16}
budget=${GRID_BUDGET_S:-540} run_limit=${GRID_RUN_TIMEOUT_S:-300}
every=$((steps / 10 > 0 ? steps / 10 : 1))
for tool in build-gpu/tt-train build-gpu/ttgen; do
    [ -x "$tool" ] || { echo "grid-bench: no $tool (build build-gpu/ first)"; exit 1; }
done
ck_root=/tmp/tt-grid-ck
current_spec=
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() { rm -rf "$ck_root" specs/grid-prewarm-*.yaml; [ -z "$current_spec" ] || rm -f "$current_spec"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
card=$(tail -1 "$out/gpu.txt" | cut -d, -f1)
csv=$out/table.csv
echo "point,D,N,R,H,position,B,ours_tok_s,peer_tok_s,ratio,ours_mfu_pct,peer_mfu_pct,ours_mib,peer_mib,ours_s,peer_s,note" > "$csv"
# the commit measured: TT_COMMIT where the tree is a snapshot without its own .git (git would
# answer for whatever repository holds it)
rev=${TT_COMMIT:-}
[ -n "$rev" ] || { rev=$(git rev-parse --short HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || rev+=" with changes"; }; }
header="== issue 17's grid on $card, ${rev:-no git}: ours tt-train bf16 ($steps steps, steady rate after the first $every steps$([ "${GRID_TUNE:-0}" = 1 ] && echo ', ttgen --tune first')); peer torch_tt.py $peer_args, $peer_steps steps; 4 layers, F 4D, B x N 2560, PTB full softmax"
write_table() { { echo "$header"; grid_table "$csv"; } > "$out/table.txt"; }

t_start=$(date +%s)
failed=0 remaining=()
echo "points: $(awk '{ printf "%s ", $1 }' <<< "$pts")"
if [ "${GRID_PREWARM:-0}" -gt 0 ] 2> /dev/null; then
    mkdir -p "$out/prewarm"
    while read -r name d n r h pos; do
        while [ "$(jobs -rp | wc -l)" -ge "$GRID_PREWARM" ]; do wait -n; done
        grid_spec "$out/prewarm/$name.yaml" "$name" "$d" "$n" "$r" "$h" "$pos" "$steps"
        tt_local_spec "$out/prewarm/$name.yaml" "specs/grid-prewarm-$name.yaml"
        # shellcheck disable=SC2086 # PEER_ARGS is words
        { build-gpu/ttgen "specs/grid-prewarm-$name.yaml" > "$out/prewarm/$name-ttgen.log" 2>&1
          rm -f "specs/grid-prewarm-$name.yaml"
          timeout "$run_limit" python3 bench/torch_tt.py time "$(grid_values "$d" "$n" "$r" "$h")" \
              $peer_args --steps 1 < /dev/null > "$out/prewarm/$name-peer.log" 2>&1; } &
    done <<< "$pts"
    wait
    echo "== prewarmed $(wc -l <<< "$pts") points, $GRID_PREWARM at a time, in $(($(date +%s) - t_start)) s (inside GRID_BUDGET_S)"
fi
while read -r name d n r h pos; do
    est=$(grid_estimate "$d" "$n" "$r" "$h")
    elapsed=$(($(date +%s) - t_start))
    if [ $((elapsed + est)) -gt "$budget" ]; then
        echo "== $name: not started (${elapsed} s gone, estimated $est s, GRID_BUDGET_S $budget)"
        remaining+=("$name")
        echo "$name,$d,$n,$r,$h,$pos,$(grid_batch "$n"),,,,,,,,,,not run (time budget)" >> "$csv"
        continue
    fi
    b=$(grid_batch "$n") values=$(grid_values "$d" "$n" "$r" "$h")
    echo "== $name: D $d N $n R $r H $h position $pos B $b F $((4 * d)); estimated $est s (at $elapsed s)"
    grid_spec "$out/specs/$name.yaml" "$name" "$d" "$n" "$r" "$h" "$pos" "$steps"
    current_spec=specs/grid-$name.yaml
    tt_local_spec "$out/specs/$name.yaml" "$current_spec"
    note=() ours_log=$out/$name-ours.log peer_log=$out/$name-peer.log
    [ "$pos" = key ] && note+=("peer without position: key (torch_tt.py has none)")

    # ours
    t0=$(date +%s.%N)
    if [ "${GRID_TUNE:-0}" = 1 ]; then
        timeout "$run_limit" build-gpu/ttgen "$current_spec" --tune < /dev/null > "$out/$name-tune.log" 2>&1 ||
            note+=("ttgen --tune failed")
    fi
    rm -rf "${ck_root:?}/$name"
    timeout "$run_limit" build-gpu/tt-train "$current_spec" --device cuda --checkpoint-dir "$ck_root/$name" \
        --log-every "$every" < /dev/null > "$ours_log" 2>&1
    rc=$?
    rm -rf "${ck_root:?}/$name" "$current_spec"
    current_spec=
    ours_s=$(awk "BEGIN { printf \"%.0f\", $(date +%s.%N) - $t0 }")
    ours=$(tt_steady_rate "$ours_log")
    if [ $rc != 0 ] || [ -z "$ours" ]; then
        note+=("ours FAILED (exit $rc): $(tail -n 1 "$ours_log" | cut -c 1-160)")
        failed=1
        ours=
        tail -n 5 "$ours_log"
    else
        grep -E '^trained steps|^MFU' "$ours_log"
    fi
    read -r mfu_peak mfu_flop ours_mib < <(awk '
        $1 == "device" && $2 == "memory:" { mib = $3 }
        $1 == "MFU" { for (i = 2; i <= NF; i++) { if ($i == "TFLOP/s") peak = $(i - 1)
                                                  if ($i ~ /FLOP\/token/) flop = $(i - 1) * ($i ~ /^G/ ? 1e9 : 1e6) } }
        END { printf "%s %s %s\n", peak ? peak : "-", flop ? flop : "-", mib ? mib : "-" }' "$ours_log")

    # the peer
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # PEER_ARGS is words
    timeout "$run_limit" python3 bench/torch_tt.py time "$values" $peer_args --steps "$peer_steps" \
        < /dev/null > "$peer_log" 2>&1
    rc=$?
    peer_s=$(awk "BEGIN { printf \"%.0f\", $(date +%s.%N) - $t0 }")
    line=$(grep '^peer ' "$peer_log" | tail -1)
    peer=$(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^tokens\/s/) print $(i - 1) }' <<< "$line")
    peer_mib=$(awk '{ for (i = 2; i <= NF; i++) if ($i == "MiB") print $(i - 1) }' <<< "$line")
    if [ $rc != 0 ] || [ -z "$peer" ]; then
        note+=("peer FAILED (exit $rc): $(grep -v Warning "$peer_log" | tail -n 1 | cut -c 1-160)")
        failed=1
        peer=
        grep -v Warning "$peer_log" | tail -n 5
    else
        echo "$line"
    fi
    # shellcheck disable=SC2016 # awk's $
    row=$(awk -v o="$ours" -v p="$peer" -v peak="$mfu_peak" -v flop="$mfu_flop" 'BEGIN {
        ratio = o != "" && p != "" ? sprintf("%.4f", o / p) : ""
        m = o != "" && peak != "-" ? sprintf("%.1f", 100 * o * flop / (peak * 1e12)) : ""
        pm = p != "" && peak != "-" ? sprintf("%.1f", 100 * p * flop / (peak * 1e12)) : ""
        printf "%s,%s,%s,%s", ratio, m, pm, "" }')
    IFS=, read -r ratio mfu peer_mfu _ <<< "$row"
    note_s=$(IFS=';'; echo "${note[*]:-}")
    echo "$name,$d,$n,$r,$h,$pos,$b,$ours,$peer,$ratio,$mfu,$peer_mfu,${ours_mib/-/},${peer_mib},$ours_s,$peer_s,${note_s//,/ }" >> "$csv"
    echo "   $name: ours ${ours:-failed} tok/s (MFU ${mfu:--}%), peer ${peer:-failed} tok/s, ratio ${ratio:--}; took ${ours_s} + ${peer_s} s (estimated $est)"
    write_table
done <<< "$pts"

write_table
echo
cat "$out/table.txt"
if [ ${#remaining[@]} -gt 0 ]; then
    printf '%s\n' "${remaining[@]}" > "$out/remaining.txt"
    echo "not run (time budget): ${remaining[*]}"
    echo "the rest: bench/grid-bench.sh OUTDIR2 ${remaining[*]}; then bench/grid-bench.sh --merge OUTDIR_ALL $out OUTDIR2"
fi
echo "total $(($(date +%s) - t_start)) s"
exit $failed
