#!/usr/bin/env bash
# s20 call 9 (1 GPU): issue 21's sweep machinery on a GPU for the first time: ptb.yaml, rank 40,
# cores 1 and 2, causal and unmasked, with Transformer-XL's two rows, each trained until 3
# validations (every 500 steps) bring no new best, at most 3000 steps; test perplexity from the
# best weights. A smoke run of the machinery, not the table.
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B /tmp/tt-b9 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=OFF && cmake --build /tmp/tt-b9 -j16 --target tt-bench) > $L/build.log 2>&1
[ -x /tmp/tt-b9/tt-bench ] || { tail -20 $L/build.log; exit 1; }
echo "built $(el) s"
tt_local_spec specs/ptb.yaml specs/p.yaml
timeout 170 /tmp/tt-b9/tt-bench sweep specs/p.yaml --rank 40 --cores 1,2 --causal true,false --txl --train-steps 3000 --eval-interval 500 --patience 3 --out $L/sweep > $L/sweep.log 2>&1; echo "sweep rc $? ($(el) s)"
tail -12 $L/sweep.log
cut -d, -f1-3,13-23 $L/sweep/sweep.csv
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
