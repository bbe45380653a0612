#!/usr/bin/env bash
# s14 call 7: the txl units under several seeds (the twin's D from o as stored)
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
echo "commit $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_kernels) > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
for sd in 1 2 3 4 5 6; do
  TT_TEST_SEED=$sd TT_TEST_NO_VARIANTS=1 TT_TEST_CONFIGS=txl timeout 60 build-gpu/tests/test_gpu_kernels > /tmp/k$sd.log 2>&1; echo "seed $sd rc $?"
  grep -E "FAIL|ERROR|NOT CAUGHT" /tmp/k$sd.log | head -5; grep -E "^  txl_attn_bwd " /tmp/k$sd.log | awk '{print $2, $NF, $(NF-3), $(NF-2)}' | head -6
done
