#!/usr/bin/env bash
# s22 call 3 (4 x GPU, one host): the five WikiText-2 unmasked points that call 2's whole-grid
# pass did not reach (the family's search chose 1.25e-4 there), one part each, taken in turn by
# the four GPUs, each seeded with call 2's files (every other row reused).
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-400}
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
P=/tmp/parts22c
rm -rf $P
mkdir -p $P
worker() {
    local gpu=$1 part rank cores d
    for part in 128:1 128:2 128:4 64:2 64:4; do
        IFS=: read -r rank cores <<< "$part"
        d=$P/u$rank-$cores
        mkdir $d 2>/dev/null || continue
        mkdir -p $d/wt2 && cp ../parts-in/final/wt2/sweep.csv $d/wt2/
        echo "== $(el) s: GPU $gpu: rank $rank cores $cores" >> $L/u$rank-$cores.log
        CUDA_VISIBLE_DEVICES=$gpu PAPER_SWEEP_SPECS=wt2 TT_BENCH=$B/tt-bench timeout $(( LIMIT - $(el) )) \
            bench/paper-sweep.sh $d --lr 1.25e-4 --causal false --no-txl --rank $rank --cores $cores \
            >> $L/u$rank-$cores.log 2>&1
        echo "u$rank-$cores on GPU $gpu: rc $? at $(el) s"
    done
}
for g in 0 1 2 3; do worker $g & done
wait
grep -h "^\[" $L/u*.log
mkdir -p /tmp/back22c && for d in $P/u*; do cp $d/wt2/sweep.csv /tmp/back22c/$(basename $d).csv; done
tar czf $OUT/back.tgz -C /tmp/back22c . && tar czf $OUT/logs.tgz -C $L .
