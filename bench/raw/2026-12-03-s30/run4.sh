#!/usr/bin/env bash
# s31's first call (1 GPU), written in s30 and not yet run, on the branch s30-arena-size (main
# with the arena at its carved size: test_gpu_model, with test_footprint), then why adam takes
# ~709 us a wt103 step against ~631 until s17: adam_probe.cu
# times the generated kernel, as generated and without the guarded step's reads, over wt103's
# parameter count in three layouts; then the branch s30-moments-arena (the moments back in the
# arena, the layout before b00dc9a; its tree in .snap/arena: git archive s30-moments-arena ':!bench/raw')
# alternating with s30-arena-size in the goals, and both builds' wt103 profiles.
#   bash bench/raw/2026-12-03-s30/run4.sh   (repo root, on the GPU machine; carry .deps .data .snap/arena)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
(cmake -S .snap/arena -B .snap/arena/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 cmake --build .snap/arena/build-gpu -j16 --target tt-train tt-bench) > $L/build-arena.log 2>&1 || { tail -30 $L/build-arena.log; exit 1; }
echo "built $(el) s"
timeout 100 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"
grep -E "footprint|FAILED|PASSED" $L/model.log | tail -4
export PATH=$PATH:/usr/local/cuda/bin
P=/tmp/adam-probe; rm -rf $P; mkdir -p $P
build-gpu/ttgen specs/wt103.yaml --dump $P/dump > $L/dump.log 2>&1
k=$(ls $P/dump | grep -m1 '^adam_THREADS.*\.cu$'); kn=${k%.cu}
sed -e '/if (!isfinite(\*norm) || (loss && !isfinite(\*loss))) return;/d' -e "s/#define TT_KERNEL $kn/#define TT_KERNEL adam_noguard/" \
    $P/dump/$k > $P/dump/noguard.cu
grep -c isfinite $P/dump/noguard.cu
cp bench/raw/2026-12-03-s30/adam_probe.cu $P/dump/
(cd $P/dump && nvcc -O3 -std=c++17 -arch=sm_90 -DKSRC="\"$k\"" -DKNAME=$kn adam_probe.cu -o p-guard &&
 nvcc -O3 -std=c++17 -arch=sm_90 -DKSRC='"noguard.cu"' -DKNAME=adam_noguard adam_probe.cu -o p-noguard) > $L/probe-build.log 2>&1 || tail -5 $L/probe-build.log
n=$(awk '$1 == "total" { print $2; exit }' $L/dump.log); echo "parameters from ttgen: ${n:-?}"
for p in guard noguard; do timeout 60 $P/dump/p-$p ${n:-} | tee $L/probe-$p.txt; done
echo "probe $(el) s"
# base: s30-moments-arena's build; ours: s30-arena-size's
BASE=.snap/arena/build-gpu REPS=2 SPECS="wt103 ptb-b120" timeout $((540 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(el) s)"; grep -E "rep|launches" $L/goals.txt | cut -c1-150
tt_wt103_spec specs/s31-wt103.yaml 600
for b in build-gpu .snap/arena/build-gpu; do
  timeout 40 $b/tt-bench specs/s31-wt103.yaml --profile > $L/profile-$(basename $(dirname $b)).txt 2>&1
  grep -E "^optimizer|as trained" $L/profile-$(basename $(dirname $b)).txt | cut -c1-120
done
rm -f specs/s31-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
