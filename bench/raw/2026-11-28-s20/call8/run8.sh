#!/usr/bin/env bash
# s20 call 8 (1 GPU): Transformer-XL's one-token generation step on the GPU (a second engine,
# seq_len 1): test_gpu_lib (the same words as the CPU, scores and distributions), txl-ptb.yaml
# 3000 steps, 200 words on the GPU and the CPU (the same text?) and their words/s.
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B /tmp/tt-b8 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b8 -j16 --target tt-train tt-generate test_lib) > $L/build.log 2>&1
[ -x /tmp/tt-b8/tt-generate ] || { tail -20 $L/build.log; exit 1; }
echo "built $(el) s"
B=/tmp/tt-b8
TT_TEST_DEVICE=cuda timeout 120 $B/tests/test_lib > $L/gpu-lib.log 2>&1; echo "test_lib on the GPU rc $?"
grep -E "on NVIDIA|FAILED|PASSED|ERROR" $L/gpu-lib.log | head -6
tt_local_spec specs/txl-ptb.yaml specs/x3.yaml -e "s/steps: 40000/steps: 3000/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 100 $B/tt-train specs/x3.yaml --checkpoint-dir /tmp/ck-x3 --log-every 1000 > $L/x3.log 2>&1; echo "txl-ptb 3000 steps rc $?: $(grep '^trained' $L/x3.log)"
for dev in cuda cpu; do
  for opt in "--temperature 0" "--seed 1 --top-p 0.9"; do
    f=$L/xgen-$dev-${opt// /_}
    timeout 100 $B/tt-generate specs/x3.yaml --checkpoint /tmp/ck-x3 --device $dev --prompt "the company said" --tokens 200 $opt > $f.txt 2> $f.err
    echo "txl $dev $opt: rc $? $(tail -1 $f.err)"
  done
done
for opt in "--temperature 0" "--seed 1 --top-p 0.9"; do cmp -s "$L/xgen-cuda-${opt// /_}.txt" "$L/xgen-cpu-${opt// /_}.txt" && echo "txl $opt: the same 200 words on the GPU and the CPU" || echo "txl $opt: text DIFFERS"; done
head -c 300 "$L/xgen-cuda---seed_1_--top-p_0.9.txt"; echo
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
