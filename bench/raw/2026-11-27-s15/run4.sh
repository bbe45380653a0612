#!/usr/bin/env bash
# s15 call 4: programmatic dependent launch (pdl branch): GPU tests with it on, the same bits with
# it off and on, and the goal specs alternating TT_PDL=0 (base) and on (ours), one build
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(( $(date +%s) - T0 )) s"
TT_TEST_NO_VARIANTS=1 timeout 150 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels rc $?"; grep -E "FAIL|ERROR|NOT CAUGHT" $L/kernels.log | head; tail -1 $L/kernels.log
timeout 150 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $?"; grep -E "FAIL|ERROR" $L/model.log | head; tail -1 $L/model.log
(cd build-gpu && timeout 100 ctest -R "test_gpu_repro" --output-on-failure > $L/repro.log 2>&1); echo "test_gpu_repro rc $?"; tail -1 $L/repro.log
echo "tests $(( $(date +%s) - T0 )) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
# the same bits with and without programmatic launch: ptb as shipped and txl-wt103-base, short runs
tt_local_spec specs/ptb.yaml specs/bits-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 150/"
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 30/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/bits-txl.yaml
for s in ptb txl; do for v in 0 1; do
  rm -rf /tmp/bits-$s-$v; TT_PDL=$v timeout 100 build-gpu/tt-train specs/bits-$s.yaml --checkpoint-dir /tmp/bits-$s-$v > $L/bits-$s-$v.log 2>&1; echo "bits $s TT_PDL=$v rc $?"
done
  a=$(ls -d /tmp/bits-$s-0/step-* | tail -1); b=$(ls -d /tmp/bits-$s-1/step-* | tail -1)
  cmp $a/model.safetensors $b/model.safetensors && echo "bits $s: model.safetensors identical with TT_PDL=0 and 1 ($(basename $a))"
  ls $a | head; for f in $a/*; do cmp -s $f $b/$(basename $f) || echo "differs: $(basename $f)"; done
done
echo "bits $(( $(date +%s) - T0 )) s"
BASE=build-gpu BASE_ENV=TT_PDL=0 SPECS="ptb wt103 ptb-b120 txl-wt103-base lm1b-body" timeout $(( 570 - ($(date +%s) - T0) )) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $?"; cat $L/goals/runs.txt
echo "total $(( $(date +%s) - T0 )) s"
gzip -f $L/*.log $L/goals/*.log 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
