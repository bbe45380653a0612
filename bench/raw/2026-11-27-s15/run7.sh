#!/usr/bin/env bash
# s15 call 7: where lm1b's body's step goes (tt-bench --profile), and its kernels in launch order
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
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
timeout 120 build-gpu/tt-bench specs/lm1b-body.yaml --profile > $L/prof-lm1b.txt 2>&1; echo "profile rc $?"; sed -n 1,16p $L/prof-lm1b.txt | cut -c 1-130
build-gpu/ttgen specs/lm1b-body.yaml > $L/ttgen-lm1b.txt 2>&1
rm -rf /tmp/ck-nsys
timeout $(( 200 - ($(date +%s) - T0) )) nsys profile -o $L/lm1b --force-overwrite true --stats=false build-gpu/tt-train specs/lm1b-body.yaml --checkpoint-dir /tmp/ck-nsys --stop-after 30 -q > $L/nsys.log 2>&1; echo "nsys rc $?"
(nsys stats --report cuda_gpu_kern_sum --format csv $L/lm1b.nsys-rep > $L/kern-sum.csv 2>/dev/null; echo "stats rc $?"; head -30 $L/kern-sum.csv | cut -d, -f1-9 | cut -c 1-180)
echo "total $(( $(date +%s) - T0 )) s"
rm -f $L/lm1b.sqlite
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
