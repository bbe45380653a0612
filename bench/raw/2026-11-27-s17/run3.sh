#!/usr/bin/env bash
# s17 call 3: s17-stair (row groups for the materialized products from N 128; the txl test's
# shared memories): test_gpu_kernels (mat configs), test_gpu_model at the seed that failed in
# call 2 and at a fresh one; grid points d1024-n160 and d512-n160 (ours), TT_MAT_GROUP=0 against
# the default on the same build, alternating; lm1b-body unchanged check
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_TEST_CONFIGS=mat timeout 120 build-gpu/tests/test_gpu_kernels > $L/kernels-mat.log 2>&1; echo "test_gpu_kernels (mat configs) rc $? ($(el) s)"; grep -E "FAIL|ERROR|mla_mat|PASSED" $L/kernels-mat.log | grep -E "stair|FAIL|ERROR|PASSED" | head -30
TT_TEST_SEED=570268223261680922 timeout 120 build-gpu/tests/test_gpu_model > $L/model-seed.log 2>&1; echo "test_gpu_model seed 570268223261680922 rc $? ($(el) s)"; grep -E "FAILED|memory values" $L/model-seed.log | grep -E "FAILED|D 26" | head -8; grep -E "txl bf16 D 26, d_head 13 " $L/model-seed.log | tail -3; tail -1 $L/model-seed.log
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "FAILED|seed " $L/model.log | head -4; tail -1 $L/model.log
gspec() { # dst d n batch steps
cat > "$1" << EOS
model: {kind: tensorized, vocab: 10000, d_model: $2, layers: 4, rank: 40, cores: 2, seq_len: $3, d_inner: $((4 * $2)), dropout: 0.1, causal: true, tie_weights: true}
train: {batch: $4, steps: $5, optimizer: {name: adam, lr: 2.5e-4}, schedule: {kind: cosine, warmup: 0}, clip: 0.25, seed: 1, precision: bf16, eval_interval: 0}
data: {train: ../.data/ptb/ptb.train.txt.gz, valid: ../.data/ptb/ptb.valid.txt, test: ../.data/ptb/ptb.test.txt}
EOS
}
gspec specs/g-d1024-n160.yaml 1024 160 16 160
gspec specs/g-d512-n160.yaml 512 160 16 160
for rep in 1 2; do
for sp in d1024-n160 d512-n160; do
  for grp in 0 def; do
    rm -rf /tmp/ck-g
    if [ $grp = 0 ]; then export TT_MAT_GROUP=0; else unset TT_MAT_GROUP; fi
    timeout 150 build-gpu/tt-train specs/g-$sp.yaml --checkpoint-dir /tmp/ck-g --log-every 20 > $L/g-$sp-$grp-$rep.log 2>&1; rc=$?
    unset TT_MAT_GROUP
    echo "$sp group $grp rep $rep: rc $rc late $(tt_late_rate $L/g-$sp-$grp-$rep.log) tok/s; $(grep -E 'valid ppl' $L/g-$sp-$grp-$rep.log | tail -1 | cut -c1-80) ($(el) s)"
  done
done
done
tt_lm1b_body_spec specs/p-lm1b.yaml 200
timeout 60 build-gpu/tt-bench specs/p-lm1b.yaml --profile > $L/bench-prof-lm1b.txt 2>&1; echo "tt-bench --profile lm1b rc $? ($(el) s)"; grep -E "^attention|as trained|launches" $L/bench-prof-lm1b.txt | cut -c1-120
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
