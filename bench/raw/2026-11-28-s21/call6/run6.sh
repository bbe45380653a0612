#!/usr/bin/env bash
# s21 call 6 (1 x H100): how far the WikiText-2 rows were from a plateau at 15,000 steps (every
# point's best validation was its last): rank 40, 2 cores, causal and unmasked (lr 5e-4), and
# Transformer-XL with memory and without (lr 1e-3, beside a rank-8 causal point the sweep's
# --txl needs), trained for 30,000 steps, the rest as bench/paper-sweep.sh.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
B=/tmp/tt-b6
(cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTT_BUILD_TESTS=OFF -DTT_COMMIT=$(cat ../commit.txt) && cmake --build $B -j16 --target tt-bench) > $L/build.log 2>&1
[ -x $B/tt-bench ] || { tail -20 $L/build.log; exit 1; }
echo "built $(el) s"
K="--train-steps 30000 --eval-interval 1000 --patience 3"
timeout 135 $B/tt-bench sweep specs/wt2.yaml --rank 40 --cores 2 --causal true,false --lr 5e-4 $K --out $OUT/a > $L/a.log 2>&1; echo "a rc $? ($(el) s)"
timeout $(( 330 - $(el) )) $B/tt-bench sweep specs/wt2.yaml --rank 8 --cores 1 --causal true --txl --lr 1e-3 $K --out $OUT/b > $L/b.log 2>&1; echo "b rc $? ($(el) s)"
grep -h "^\[" $L/a.log $L/b.log
for d in a b; do [ -f $OUT/$d/sweep.csv ] && cut -d, -f1,2,7,13,15,17,19-22 $OUT/$d/sweep.csv; rm -f $OUT/$d/*.gp $OUT/$d/table.md; done
