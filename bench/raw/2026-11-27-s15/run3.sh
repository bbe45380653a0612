#!/usr/bin/env bash
# s15 call 3: txl-ds (scores once in the backward, dS written) against main: tests, alternating txl timing, profile
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(( $(date +%s) - T0 )) s"
TT_TEST_NO_VARIANTS=1 TT_TEST_CONFIGS=txl timeout 120 build-gpu/tests/test_gpu_kernels > $L/units.log 2>&1; echo "units rc $?"
grep -E "FAIL|ERROR|NOT CAUGHT" $L/units.log | head -8; grep -E "txl_attn_bwd " $L/units.log | head -12; tail -1 $L/units.log
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
(cd build-gpu && timeout 100 ctest -R "test_gpu_repro" --output-on-failure > $L/repro.log 2>&1); echo "test_gpu_repro rc $?"; tail -2 $L/repro.log
echo "tests $(( $(date +%s) - T0 )) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
cp specs/txl.yaml ../old/specs/
for rep in 1 2; do for t in old src; do
  rm -rf /tmp/ck-txl
  d=$([ $t = src ] && echo . || echo ../old)
  (cd $d && timeout 100 build-gpu/tt-train specs/txl.yaml --checkpoint-dir /tmp/ck-txl --log-every 20 > $L/train-$t-$rep.log 2>&1)
  echo "train $t rep $rep rc $? late $(tt_late_rate $L/train-$t-$rep.log); $(grep -E 'valid ppl' $L/train-$t-$rep.log | tail -1)"
done; done
timeout 100 build-gpu/tt-bench specs/txl.yaml --profile > $L/prof-txl.txt 2>&1; sed -n 3,14p $L/prof-txl.txt | cut -c 1-60; grep -E "launches|as trained" $L/prof-txl.txt
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
