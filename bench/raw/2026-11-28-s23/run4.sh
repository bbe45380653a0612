#!/usr/bin/env bash
# s23 call 4 (1 GPU): where lm1b's body lost 1% in call 3: tt-bench --profile of lm1b-body with
# main's build and s23-xent's, alternating, twice each
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt) old $(cat ../old.txt)"
(cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build ../old/build-gpu -j8 --target tt-bench) > $L/build-old.log 2>&1 &
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build build-gpu -j8 --target tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
wait
echo "built $(el) s"
tt_lm1b_body_spec specs/pl.yaml 200
for rep in 1 2; do
  for b in ../old/build-gpu build-gpu; do
    n=$([ $b = build-gpu ] && echo ours || echo base)
    timeout 100 $b/tt-bench specs/pl.yaml --profile > $L/prof-$n-$rep.txt 2>&1
    echo "$n $rep rc $? ($(el) s)"
  done
done
for rep in 1 2; do for n in base ours; do echo "== $n $rep"; grep -E "^(embedding|qkv|attention|layernorm|ffn|softmax|optimizer|o ) |^the step" $L/prof-$n-$rep.txt | cut -c1-60; done; done
rm -f specs/pl.yaml
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
