#!/usr/bin/env bash
# s31's third call (1 GPU) on the branch s31-combo (as run6.sh's, with test_footprint checking
# w, g, m, v on 256-byte boundaries). test_footprint; the adam probe at wt103's n_floats
# (85,295,440: main's layout there puts v 64 bytes past a 256-byte boundary, as main did);
# the wt103 profile alternating TT_LN_SUMS=1/0 three times (run6's one pair disagreed with its
# goals); goals of txl-wt103-base and lm1b-body against main (.snap/main).
#   bash bench/raw/2026-12-03-s31/run7.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S .snap/main -B .snap/main/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build .snap/main/build-gpu -j16 --target tt-train tt-bench) > $L/build-main.log 2>&1 || { tail -30 $L/build-main.log; exit 1; }
echo "built $(el) s"
TT_TEST_ONLY=test_footprint timeout 60 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_footprint rc $? ($(el) s)"
grep -E "footprint|FAILED|PASSED|ERROR" $L/model.log | tail -4
export PATH=$PATH:/usr/local/cuda/bin
P=/tmp/adam-probe; rm -rf $P; mkdir -p $P
build-gpu/ttgen specs/wt103.yaml --dump $P/dump > $L/dump.log 2>&1
k=$(ls $P/dump | grep -m1 '^adam_THREADS.*\.cu$'); kn=${k%.cu}
cp bench/raw/2026-12-03-s30/adam_probe.cu $P/dump/
(cd $P/dump && nvcc -O3 -std=c++17 -arch=sm_90 -DKSRC="\"$k\"" -DKNAME=$kn adam_probe.cu -o p-guard) > $L/probe-build.log 2>&1 || tail -5 $L/probe-build.log
timeout 60 $P/dump/p-guard 85295440 | tee $L/probe-nfloats.txt
echo "probe $(el) s"
tt_wt103_spec specs/s31-wt103.yaml 600
for rep in 1 2 3; do
  for v in 1 0; do
    TT_LN_SUMS=$v timeout 30 build-gpu/tt-bench specs/s31-wt103.yaml --profile > $L/profile-ln$v-$rep.txt 2>&1
    echo "TT_LN_SUMS=$v rep $rep: $(grep -E 'as trained' $L/profile-ln$v-$rep.txt | cut -c1-80) | $(grep -E '^layernorm|^attention' $L/profile-ln$v-$rep.txt | awk '{printf "%s %s ", $1, $4}')"
  done
done
rm -f specs/s31-wt103.yaml
echo "profiles $(el) s"
BASE=.snap/main/build-gpu REPS=2 SPECS="txl-wt103-base lm1b-body" timeout $((500 - $(el))) \
    bench/goals-check.sh $L/goals-main > $L/goals-main.txt 2>&1
echo "goals vs main rc $? ($(el) s)"; grep -E "rep|launches" $L/goals-main.txt | cut -c1-150
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
