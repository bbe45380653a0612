#!/usr/bin/env bash
# s16 call 7: test_gpu_model at HEAD, whose graph test gained the TT_DEFER_SUMS=0 mode
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_model) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(( $(date +%s) - T0 )) s"
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; grep -E "sums a layer|graphs captured" $L/model.log | head -12; tail -1 $L/model.log
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
