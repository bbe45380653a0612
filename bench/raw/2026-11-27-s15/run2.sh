#!/usr/bin/env bash
# s15 call 2: txl-s15 (direct grads, dR split, kv no skip): every GPU test, the step profile, ncu of the txl kernels
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $?"; grep -E "FAIL|ERROR|NOT CAUGHT" $L/kernels.log | head -20; tail -1 $L/kernels.log
echo "kernels $(( $(date +%s) - T0 )) s"
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
(cd build-gpu && timeout 150 ctest -R "test_gpu_repro" --output-on-failure > $L/repro.log 2>&1); echo "test_gpu_repro rc $?"; tail -2 $L/repro.log
echo "tests $(( $(date +%s) - T0 )) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
timeout 100 build-gpu/tt-bench specs/txl.yaml --profile > $L/prof-txl.txt 2>&1; sed -n 3,14p $L/prof-txl.txt | cut -c 1-60; grep -E "launches" $L/prof-txl.txt
echo "profile $(( $(date +%s) - T0 )) s"
timeout $(( 560 - ($(date +%s) - T0) )) bench/profile-txl.sh $L/ncu > $L/ncu-summary.txt 2>&1; echo "ncu rc $?"
grep -E "^  txl_|Duration|Registers Per" $L/ncu-summary.txt | head -30
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
