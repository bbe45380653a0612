#!/usr/bin/env bash
# s15 call 1: main (old) vs txl-dr-split (a) vs +kv-noskip (b) vs +bwdq-halves (src): tests, alternating txl timing
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
for t in old a b; do
  (cmake -S ../$t -B ../$t/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build ../$t/build-gpu -j16 --target tt-train test_gpu_kernels) > $L/build-$t.log 2>&1 || { tail -30 $L/build-$t.log; exit 1; }
  ln -sfn "$PWD/.data" ../$t/.data
done
echo "built $(( $(date +%s) - T0 )) s"
for t in src a b; do
  d=$([ $t = src ] && echo . || echo ../$t)
  (cd $d && TT_TEST_NO_VARIANTS=1 TT_TEST_CONFIGS=txl timeout 120 build-gpu/tests/test_gpu_kernels > $L/units-$t.log 2>&1; echo "units $t rc $?")
  grep -E "FAIL|ERROR|NOT CAUGHT" $L/units-$t.log | head -8; tail -1 $L/units-$t.log
done
echo "units $(( $(date +%s) - T0 )) s"
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
echo "model $(( $(date +%s) - T0 )) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
for t in old a b; do cp specs/txl.yaml ../$t/specs/; done
for rep in 1 2; do for t in old a b src; do
  rm -rf /tmp/ck-txl
  d=$([ $t = src ] && echo . || echo ../$t)
  (cd $d && timeout 100 build-gpu/tt-train specs/txl.yaml --checkpoint-dir /tmp/ck-txl --log-every 20 > $L/train-$t-$rep.log 2>&1)
  echo "train $t rep $rep rc $? late $(tt_late_rate $L/train-$t-$rep.log); $(grep -E 'valid ppl' $L/train-$t-$rep.log | tail -1)"
  [ $(( $(date +%s) - T0 )) -gt 540 ] && break 2
done; done
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
