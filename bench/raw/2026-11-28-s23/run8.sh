#!/usr/bin/env bash
# s23 call 8 (1 GPU): branch bf16-sums (rebased on d20fd8a): its kernels' units on one GPU
# (test_gpu_kernels; cast_widen among them, checked exactly against the CPU), and one GPU's
# training unchanged by it (test_gpu_model). Its multi-GPU paths need a host of 2 or more.
set -uo pipefail
cd .snap/sums
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "sums $(cat ../sums.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j14 --target test_gpu_kernels test_gpu_model) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
(cd build-gpu && timeout 150 ctest -R test_gpu_kernels --output-on-failure) > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $? ($(el) s)"
grep -E "cast_widen" $L/kernels.log | head -8; grep -E "FAILED|ERROR" $L/kernels.log | head -5
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; tail -1 $L/model.log
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
