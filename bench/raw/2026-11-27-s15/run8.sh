#!/usr/bin/env bash
# s15 call 8: the materialized attention by ranges of positions (mat-chunks) against main: the
# mat units and lm1b's plan, the model test, lm1b's body alternating
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target tt-train test_gpu_kernels test_gpu_model) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }
ln -sfn "$PWD/.data" ../old/.data
echo "built $(( $(date +%s) - T0 )) s"
for f in mat lm1b; do
  TT_TEST_NO_VARIANTS=1 TT_TEST_CONFIGS=$f timeout 60 build-gpu/tests/test_gpu_kernels > $L/units-$f.log 2>&1; echo "units $f rc $?"
  grep -E "FAIL|ERROR|NOT CAUGHT" $L/units-$f.log | head -8; grep -E "^  mla_mat" $L/units-$f.log | head -12; tail -1 $L/units-$f.log
done
echo "units $(( $(date +%s) - T0 )) s"
timeout 70 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
echo "model $(( $(date +%s) - T0 )) s"
data=.data
cat > specs/lm1b-body.yaml <<EOS
model:
  kind: tensorized
  vocab: data
  d_model: 1024
  layers: 8
  rank: 40
  cores: 2
  seq_len: 80
  d_inner: 2100
  dropout: 0.1
train:
  batch: 32
  steps: 200
  precision: bf16
  eval_interval: 0
data:
  train: ../$data/ptb/ptb.train.txt.gz
  valid: ../$data/ptb/ptb.valid.txt
EOS
cp specs/lm1b-body.yaml ../old/specs/
for rep in 1 2; do for t in old src; do
  [ $(( $(date +%s) - T0 )) -gt 185 ] && break 2
  rm -rf /tmp/ck-l
  d=$([ $t = src ] && echo . || echo ../old)
  (cd $d && timeout 40 build-gpu/tt-train specs/lm1b-body.yaml --checkpoint-dir /tmp/ck-l --log-every 20 > $L/train-$t-$rep.log 2>&1)
  echo "train $t rep $rep rc $? late $(tt_late_rate $L/train-$t-$rep.log); $(grep -E 'valid ppl' $L/train-$t-$rep.log | tail -1)"
done; done
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
