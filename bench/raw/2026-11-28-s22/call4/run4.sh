#!/usr/bin/env bash
# s22 call 4 (4 x GPU, one host): issue 21's PTB grid at its spec's 40,000 steps (patience 3,
# rates 1.25e-4..2e-3), fresh, split over four GPUs as call 1 split WikiText-2's:
#   GPU 0: causal ranks 8,16,40 (the family's search at rank 8, cores 1)
#   GPU 1: unmasked ranks 8,16,40 (likewise)
#   GPU 2: the Transformer-XLs (--txl-only, both searches), then unmasked rank 128 at GPU 1's rate
#   GPU 3: causal ranks 64,128 at GPU 0's rate (once its search ends), then unmasked rank 64
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-420}
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
B=/tmp/tt-b22
(cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTT_BUILD_TESTS=OFF -DTT_COMMIT=$(cat ../commit.txt) &&
 cmake --build $B -j32 --target tt-bench) > $L/build.log 2>&1
[ -x $B/tt-bench ] || { tail -20 $L/build.log; exit 1; }
echo "built tt-bench $(el) s"
P=/tmp/parts22d
rm -rf $P
mkdir -p $P
left() { echo $(( LIMIT - $(el) )); }
sw() { # GPU PART OPTIONS...: a part of the grid until the call's time runs out
    local gpu=$1 d=$2 t
    shift 2
    t=$(left)
    [ "$t" -gt 10 ] || return 124
    echo "== $(el) s: GPU $gpu: $d $*" >> $L/$d.log
    CUDA_VISIBLE_DEVICES=$gpu PAPER_SWEEP_SPECS=ptb TT_BENCH=$B/tt-bench timeout "$t" \
        bench/paper-sweep.sh $P/$d "$@" >> $L/$d.log 2>&1
    echo "$d on GPU $gpu: rc $? at $(el) s"
}
chosen() { # PART FAMILY: the rate that family's search chose, once it has ended (fresh folders)
    awk -F, -v f="$2" '$1 == f && $5 == 1 { print $2 }' $P/$1/ptb/lr_search.csv 2>/dev/null
}
waitlr() {
    while [ -z "$(chosen "$1" "$2")" ]; do
        [ "$(left)" -gt 10 ] || return 1
        sleep 3
    done
}
(sw 0 c1 --causal true --rank 8,16,40 --no-txl) &
(sw 1 u1 --causal false --rank 8,16,40 --no-txl) &
(sw 2 txl --txl-only
 waitlr u1 tensorized-unmasked && sw 2 u3 --causal false --rank 128 --no-txl --lr "$(chosen u1 tensorized-unmasked)") &
(waitlr c1 tensorized-causal && sw 3 c2 --causal true --rank 64,128 --no-txl --lr "$(chosen c1 tensorized-causal)"
 waitlr u1 tensorized-unmasked && sw 3 u2 --causal false --rank 64 --no-txl --lr "$(chosen u1 tensorized-unmasked)") &
wait
echo "parts done at $(el) s"
for d in c1 u1 txl c2 u2 u3; do
    [ -f $L/$d.log ] && { echo "--- $d"; grep -E "^lr search|^\[" $L/$d.log | grep -v "the last run's" | tail -14; }
done
tar czf $OUT/parts.tgz -C $P .
tar czf $OUT/logs.tgz -C $L .
