#!/usr/bin/env bash
# s23 call 7 (1 GPU): s23-xent's wt103 step, kernel by kernel (bench/profile-step.sh), and
# tt-bench --profile of lm1b's body
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null && cmake --build build-gpu -j14 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
tt_lm1b_body_spec specs/pl.yaml 200
timeout 60 build-gpu/tt-bench specs/pl.yaml --profile > $L/prof-lm1b-body.txt 2>&1; echo "lm1b-body profile rc $? ($(el) s)"
grep -E "^(softmax|ffn|optimizer) |^the step" $L/prof-lm1b-body.txt | cut -c1-100
rm -f specs/pl.yaml
timeout 200 bench/profile-step.sh $L/prof wt103 > /dev/null 2>&1; echo "profile rc $? ($(el) s)"
cat $L/prof/step-breakdown.txt
gzip -f $L/prof/ncu-step.csv
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
