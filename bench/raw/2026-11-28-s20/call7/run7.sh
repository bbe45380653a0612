#!/usr/bin/env bash
# s20 call 7 (1 GPU): the session's last code. ctest -L gpu (the kernels, the model step, the
# reproducibility tests with the guarded step, libtt against the CPU); ptb.yaml 15000 steps again
# with curve.png where gnuplot is; tt-generate's words/s now that the engine skips its own
# output layer and sampling sorts only when it truncates (GPU and CPU, the same text?); the
# installed example on the GPU.
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt); gnuplot: $(command -v gnuplot || echo none)"
(cmake -S . -B /tmp/tt-b7 -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/tt-b7 -j16) > $L/build.log 2>&1
[ -x /tmp/tt-b7/tt-generate ] || { grep -B3 -m3 "rror" $L/build.log; tail -20 $L/build.log; exit 1; }
echo "built $(el) s"
B=/tmp/tt-b7
timeout 300 ctest --test-dir $B -L gpu --output-on-failure > $L/gpu-tests.log 2>&1; echo "ctest -L gpu rc $?: $(grep -E 'tests passed|tests failed' $L/gpu-tests.log)"
grep -E "Test +#" $L/gpu-tests.log
echo "($(el) s)"
tt_local_spec specs/ptb.yaml specs/p15.yaml -e "s/steps: 40000/steps: 15000/"
timeout 200 $B/tt-train specs/p15.yaml --checkpoint-dir /tmp/ck-p15 --log-json $L/p15.jsonl --log-every 1000 > $L/p15.log 2>&1; echo "ptb 15000 steps rc $?: $(grep '^trained' $L/p15.log)"
grep -m1 "note" $L/p15.log; ls /tmp/ck-p15 | tr '\n' ' '; echo
for dev in cuda cpu; do
  for opt in "--temperature 0" "--seed 1 --top-p 0.9" "--seed 4"; do
    f=$L/gen-$dev-${opt// /_}
    timeout 120 $B/tt-generate specs/p15.yaml --checkpoint /tmp/ck-p15 --device $dev --prompt "the company said" --tokens 200 $opt > $f.txt 2> $f.err
    echo "ptb $dev $opt: rc $? $(tail -1 $f.err)"
  done
done
for opt in "--temperature 0" "--seed 1 --top-p 0.9" "--seed 4"; do cmp -s "$L/gen-cuda-${opt// /_}.txt" "$L/gen-cpu-${opt// /_}.txt" && echo "ptb $opt: the same 200 words on the GPU and the CPU" || echo "ptb $opt: text DIFFERS"; done
tt_local_spec specs/txl-ptb.yaml specs/x3.yaml -e "s/steps: 40000/steps: 3000/" -e "s/eval_interval: 1000/eval_interval: 0/"
timeout 200 $B/tt-train specs/x3.yaml --checkpoint-dir /tmp/ck-x3 --log-every 1000 > $L/x3.log 2>&1; echo "txl-ptb 3000 steps rc $?"
for dev in cuda cpu; do
  timeout 120 $B/tt-generate specs/x3.yaml --checkpoint /tmp/ck-x3 --device $dev --prompt "the company said" --tokens 200 --seed 1 --top-p 0.9 > $L/xgen-$dev.txt 2> $L/xgen-$dev.err
  echo "txl $dev: rc $? $(tail -1 $L/xgen-$dev.err)"
done
cmp -s $L/xgen-cuda.txt $L/xgen-cpu.txt && echo "txl: the same 200 words on the GPU and the CPU" || echo "txl: text DIFFERS"
cmake --install $B --prefix /tmp/tt-prefix > $L/install.log 2>&1 && cmake -S examples -B /tmp/ex -DCMAKE_PREFIX_PATH=/tmp/tt-prefix > $L/ex.log 2>&1 && cmake --build /tmp/ex >> $L/ex.log 2>&1 && /tmp/ex/score_sentence specs/p15.yaml /tmp/ck-p15 "the company said it expects to report a loss" cuda | tail -3
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
