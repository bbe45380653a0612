#!/usr/bin/env bash
# s17 call 5: main: test_gpu_model at the failing seed with the farthest entries printed; ttgen
# --tune on lm1b's body, then its training with the tuned variants against the heuristics'
# (alternating); the grid's two N 160 points against the compiled peer
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
TT_TEST_SEED=570268223261680922 timeout 120 build-gpu/tests/test_gpu_model > $L/model-seed.log 2>&1; echo "test_gpu_model seed 570268223261680922 rc $? ($(el) s)"; grep -E "OVER|farthest" $L/model-seed.log | head -12
tt_lm1b_body_spec specs/t-lm1b.yaml 200
TTGEN_CACHE_DIR=/tmp/ctune timeout 150 build-gpu/ttgen specs/t-lm1b.yaml --tune > $L/tune-lm1b.txt 2>&1; echo "ttgen --tune lm1b rc $? ($(el) s)"; grep -iE "residual_ln|layernorm|chosen|faster|x " $L/tune-lm1b.txt | head -20
for rep in 1 2; do for c in heur tune; do
  rm -rf /tmp/ck-t
  if [ $c = heur ]; then cd_=/tmp/cheur; else cd_=/tmp/ctune; fi
  TTGEN_CACHE_DIR=$cd_ timeout 100 build-gpu/tt-train specs/t-lm1b.yaml --checkpoint-dir /tmp/ck-t --log-every 20 > $L/t-lm1b-$c-$rep.log 2>&1
  echo "lm1b-body $c rep $rep: rc $? late $(tt_late_rate $L/t-lm1b-$c-$rep.log) tok/s ($(el) s)"
done; done
GRID_BUDGET_S=380 timeout 420 bench/grid-bench.sh $L/grid d1024-n160-r40-c2 d512-n160-r40-c2 > $L/grid.txt 2>&1; echo "grid rc $? ($(el) s)"; tail -8 $L/grid.txt
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
