#!/usr/bin/env bash
# s14 call 1: GPU tests of s14 (xent_grad + dropout int), alternating wt103/p120 vs main, txl profile
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "commit $(cat ../commit.txt) against $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train tt-bench) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
tt_wt103_corpus > $L/corpus.txt &
timeout 280 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $?"; grep -E "FAIL|ERROR" $L/kernels.log | head -10; grep -E "^ *xent" $L/kernels.log | head -8; tail -2 $L/kernels.log
wait
timeout 200 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -2 $L/model.log
tt_wt103_spec specs/w.yaml 600
tt_local_spec specs/ptb.yaml specs/p120.yaml -e "s/batch: 32/batch: 120/" -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
cp specs/w.yaml specs/p120.yaml ../old/specs/
for rep in 1 2; do for s in w p120; do for b in old src; do
  rm -rf /tmp/ck-$s
  d=$([ $b = old ] && echo ../old || echo .)
  (cd $d && timeout 100 build-gpu/tt-train specs/$s.yaml --checkpoint-dir /tmp/ck-$s --log-every 40 > $L/train-$s-$b-$rep.log 2>&1)
  echo "train $s $b rep $rep rc $? late $(tt_late_rate $L/train-$s-$b-$rep.log); $(grep -E 'valid ppl' $L/train-$s-$b-$rep.log | tail -1)"
done; done; done
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
timeout 120 build-gpu/tt-bench specs/txl.yaml --profile > $L/prof-txl.txt 2>&1; cat $L/prof-txl.txt | head -30
gzip -f $L/kernels.log $L/model.log $L/train-*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
