#!/usr/bin/env bash
# s20 call 4 (1 GPU): call 3 again after libtt runs in fp32 on the GPU and libtt.so links (zlib). test_gpu_lib (the GPU against the CPU: scores, next-token
# distributions, the same generated words); ptb.yaml trained 15000 steps (validation every 1000,
# --log-json: the README's curve) and its test perplexity; tt-generate from it on the GPU and the
# CPU (the same seed: the same text?) and their words/s; the same for txl-ptb.yaml (3000 steps).
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
[ -x /tmp/tt-b4/tt-generate ] || (cmake -S . -B /tmp/tt-b4 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b4 -j16) > $L/build.log 2>&1
[ -x /tmp/tt-b4/tt-generate ] || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
B=/tmp/tt-b4
timeout 200 ctest --test-dir $B -R test_gpu_lib --output-on-failure > $L/gpu-lib.log 2>&1; echo "test_gpu_lib rc $?"
grep -E "on NVIDIA|FAILED|PASSED|Failed|Passed" $L/gpu-lib.log | head -8
echo "($(el) s)"
tt_local_spec specs/ptb.yaml specs/p15.yaml -e "s/steps: 40000/steps: 15000/"
sed -i -e "s|checkpoint: {dir: [^,]*,|checkpoint: {dir: /tmp/ck-p15,|" specs/p15.yaml
grep -n "steps:\|eval_interval\|checkpoint" specs/p15.yaml
timeout 200 $B/tt-train specs/p15.yaml --checkpoint-dir /tmp/ck-p15 --log-json $L/p15.jsonl --log-every 1000 > $L/p15.log 2>&1; echo "ptb 15000 steps rc $?: $(grep '^trained' $L/p15.log)"
grep "valid ppl" $L/p15.log | tail -3
$B/tt-eval specs/p15.yaml --checkpoint /tmp/ck-p15 --split test | tee $L/p15-test.txt
for dev in cuda cpu; do
  for opt in "--temperature 0" "--seed 1 --top-p 0.9" "--seed 2 --top-p 0.9"; do
    timeout 120 $B/tt-generate specs/p15.yaml --checkpoint /tmp/ck-p15 --device $dev --prompt "the company said" --tokens 60 $opt > $L/gen-$dev-${opt// /_}.txt 2> $L/gen-$dev-${opt// /_}.err
    echo "ptb $dev $opt: rc $? $(cat $L/gen-$dev-${opt// /_}.err | tail -1)"
  done
done
for opt in "--temperature 0" "--seed 1 --top-p 0.9" "--seed 2 --top-p 0.9"; do cmp -s $L/gen-cuda-${opt// /_}.txt $L/gen-cpu-${opt// /_}.txt && echo "ptb $opt: the same text on the GPU and the CPU" || echo "ptb $opt: text DIFFERS"; done
cat "$L/gen-cuda---seed_1_--top-p_0.9.txt"
timeout 120 $B/tt-generate specs/p15.yaml --checkpoint /tmp/ck-p15 --device cuda --prompt "the" --tokens 500 --seed 3 -q > /dev/null 2>&1
timeout 120 $B/tt-generate specs/p15.yaml --checkpoint /tmp/ck-p15 --device cuda --prompt "the" --tokens 500 --seed 3 2>&1 >/dev/null | tail -1 | sed 's/^/ptb 500 words: /'
printf 'the company said it expects to report a loss\nthe loss company said report to it a expects\n' > /tmp/two.txt
$B/tt-eval specs/p15.yaml --checkpoint /tmp/ck-p15 --text /tmp/two.txt --per-line --device cuda | tee $L/per-line.txt
echo "($(el) s)"
tt_local_spec specs/txl-ptb.yaml specs/x3.yaml -e "s/steps: 40000/steps: 3000/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 200 $B/tt-train specs/x3.yaml --checkpoint-dir /tmp/ck-x3 --log-every 1000 > $L/x3.log 2>&1; echo "txl-ptb 3000 steps rc $?: $(grep '^trained' $L/x3.log)"
for dev in cuda cpu; do
  timeout 120 $B/tt-generate specs/x3.yaml --checkpoint /tmp/ck-x3 --device $dev --prompt "the company said" --tokens 100 --seed 1 --top-p 0.9 > $L/xgen-$dev.txt 2> $L/xgen-$dev.err
  echo "txl $dev: rc $? $(tail -1 $L/xgen-$dev.err)"
done
cmp -s $L/xgen-cuda.txt $L/xgen-cpu.txt && echo "txl: the same text on the GPU and the CPU" || echo "txl: text DIFFERS"
cp /tmp/ck-p15/latest $L/ 2>/dev/null
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
