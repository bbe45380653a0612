#!/usr/bin/env bash
# s14 call 2: fused TXL attention: GPU tests, then txl-wt103-base alternating vs main, profile
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "commit $(cat ../commit.txt) against $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
[ -x ../old/build-gpu/tt-train ] || { (cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train tt-bench) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }; }
ln -sfn "$PWD/.data" ../old/.data
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt &
TT_TEST_CONFIGS=txl timeout 250 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels (txl) rc $?"; grep -E "FAIL|ERROR|NOT CAUGHT|txl_attn" $L/kernels.log | head -40; tail -3 $L/kernels.log
wait
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR|txl" $L/model.log | head -20; tail -2 $L/model.log
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
cp specs/txl.yaml ../old/specs/
for rep in 1 2; do for b in old src; do
  rm -rf /tmp/ck-txl
  d=$([ $b = old ] && echo ../old || echo .)
  (cd $d && timeout 120 build-gpu/tt-train specs/txl.yaml --checkpoint-dir /tmp/ck-txl --log-every 20 > $L/train-txl-$b-$rep.log 2>&1)
  echo "train txl $b rep $rep rc $? late $(tt_late_rate $L/train-txl-$b-$rep.log); $(grep -E 'valid ppl' $L/train-txl-$b-$rep.log | tail -1)"
done; done
timeout 100 build-gpu/tt-bench specs/txl.yaml --profile > $L/prof-txl.txt 2>&1; head -14 $L/prof-txl.txt; grep -E "as trained|launches" $L/prof-txl.txt | cut -c 1-120
gzip -f $L/kernels.log $L/model.log $L/train-*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
