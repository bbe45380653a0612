#!/usr/bin/env bash
# s22 call 2 (4 x GPU, one host): issue 21's search widened down to 1.25e-4 (call 1 chose 2.5e-4,
# then the lowest rate, for WikiText-2's causal and txl-mem families), both corpora, resumed
# from call 1's parts (WikiText-2, 60,000 steps) and session 21's files (PTB, 15,000 steps):
#   phase A: each family's new trial (GPU 0 causal, GPU 1 unmasked, GPU 2 the Transformer-XLs,
#            GPU 3 the whole PTB grid, which trains what the new rate changes)
#   phase B: WikiText-2's tensorized points at the rate each search chose, in ten parts that the
#            four GPUs take in turn (a part whose rate did not change reuses every row)
#   then the whole WikiText-2 grid over the joined parts (--resume: every row reused, anything
#   missing trained), and its files sent back.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-565}
LRS=1.25e-4,2.5e-4,5e-4,1e-3,2e-3
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
P=/tmp/parts22b
rm -rf $P
mkdir -p $P
cp -r ../parts-in/. $P/
left() { echo $(( LIMIT - $(el) )); }
sw() { # GPU CORPUS PART OPTIONS...: a part of a grid until the call's time runs out
    local gpu=$1 corpus=$2 d=$3 t
    shift 3
    t=$(left)
    [ "$t" -gt 10 ] || return 124
    echo "== $(el) s: GPU $gpu: $d $*" >> $L/$d.log
    CUDA_VISIBLE_DEVICES=$gpu PAPER_SWEEP_SPECS=$corpus TT_BENCH=$B/tt-bench timeout "$t" \
        bench/paper-sweep.sh $P/$d --lr $LRS "$@" >> $L/$d.log 2>&1
    echo "$d on GPU $gpu: rc $? at $(el) s"
}
chosen() { # PART FAMILY: the rate that family's search chose, once it has ended
    awk -F, -v f="$2" '$1 == f && $5 == 1 { print $2 }' $P/$1/wt2/lr_search.csv 2>/dev/null
}
waitlr() {
    while [ -z "$(chosen "$1" "$2")" ]; do
        [ "$(left)" -gt 10 ] || return 1
        sleep 5
    done
}
join() { # DEST/wt2 PARTS...: one header, every part's rows (a hash found twice: the first reused)
    local dest=$1/wt2 f
    shift
    mkdir -p $dest
    for f in sweep.csv lr_search.csv; do
        head -1 $P/c1/wt2/$f > $dest/$f
        for d in "$@"; do [ -f $P/$d/wt2/$f ] && tail -n +2 $P/$d/wt2/$f >> $dest/$f; done
    done
}
# seeds: each search's part starts from its family's files; phase B's parts from the family's rows
# (a part's files at its end hold its own grid's rows alone: phase B seeds from seedc and seedu)
join $P/seedc c1 c2 && cp -r $P/seedc $P/cs
join $P/seedu u1 u2 u3 && cp -r $P/seedu $P/us
worker() { # GPU: phase B's parts, taken in turn
    local gpu=$1 part fam rank extra name lr seed
    for part in c:8:"--cores 2,4" c:16: c:40: c:64: c:128: u:8:"--cores 2,4" u:16: u:40: u:64: u:128:; do
        IFS=: read -r fam rank extra <<< "$part"
        name=B$fam$rank
        mkdir $P/claim-$name 2>/dev/null || continue
        if [ $fam = c ]; then waitlr cs tensorized-causal || return; lr=$(chosen cs tensorized-causal); seed=seedc
        else waitlr us tensorized-unmasked || return; lr=$(chosen us tensorized-unmasked); seed=seedu; fi
        mkdir -p $P/$name/wt2 && cp $P/$seed/wt2/sweep.csv $P/$name/wt2/
        sw $gpu wt2 $name --causal $([ $fam = c ] && echo true || echo false) --rank $rank \
           ${extra:-} --no-txl --lr "$lr"
    done
}
(sw 0 wt2 cs --causal true --rank 8 --cores 1 --no-txl; worker 0) &
(sw 1 wt2 us --causal false --rank 8 --cores 1 --no-txl; worker 1) &
(sw 2 wt2 txl --txl-only; worker 2) &
(sw 3 ptb ptb; worker 3) &
wait
echo "parts done at $(el) s"
join $P/final c1 c2 u1 u2 u3 txl cs us Bc8 Bc16 Bc40 Bc64 Bc128 Bu8 Bu16 Bu40 Bu64 Bu128
sw 0 wt2 final
for d in cs us txl ptb Bc8 Bc16 Bc40 Bc64 Bc128 Bu8 Bu16 Bu40 Bu64 Bu128 final; do
    [ -f $L/$d.log ] && { echo "--- $d"; grep -E "^lr search|^\[" $L/$d.log | grep -v "the last run's" | tail -16; }
done
grep -c "the last run's" $L/final.log
mkdir -p /tmp/back && cp -r $P/final/wt2 /tmp/back/wt2 && cp -r $P/ptb/ptb /tmp/back/ptb
tar czf $OUT/sweep.tgz -C /tmp/back .
tar czf $OUT/parts.tgz -C $P .
tar czf $OUT/logs.tgz -C $L .
