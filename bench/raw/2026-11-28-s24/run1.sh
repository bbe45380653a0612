#!/usr/bin/env bash
# s24 call 1 (2 x H200, one host): branch bf16-sums (rebased on main f50bcf4):
# GPUS=2 TXL=0 TT_TEST_CONFIGS=wt103 bench/sums-bench.sh: cast_widen's unit, weak scaling on the
# wt103 shapes with fp32 and bf16 sums (twice, alternating), bf16 + --shard-optimizer, the
# 200-step trajectory against one GPU, the same bits twice.
set -uo pipefail
cd .snap/src
L=$OUT/logs
mkdir -p $L
echo "commit $(cat ../commit.txt)"
export NCCL_NVLS_ENABLE=0
GPUS=2 TXL=0 TT_TEST_CONFIGS=wt103 timeout 560 bench/sums-bench.sh $L/sums 2>&1 | tee $L/summary.txt
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
