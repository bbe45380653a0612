#!/usr/bin/env bash
# s34 call 3 (1 GPU), branch s34-ffn-pipe: ffn_in_fwd/bwd with a producer warp (rows in two buffers, the weight in a ring of boxes)
# (the next item's products beside the last one's epilogue), and the attention backward's
# r-vectors judged against their per-sequence floor (branch s34-test-floor, merged in). Every GPU
# unit (test_gpu_kernels; ffn_in's checks on 3 blocks), the failing seed of s34 call 1 again
# (mat-odd-key), test_gpu_model, then ncu of the FFN kernels both ways, wt103/ptb/ptb-b120
# alternating with TT_FFN_IN=0 in one build, and tt-bench --profile of wt103 both ways.
#   bash bench/raw/2026-12-06-s34/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
 cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"


timeout 240 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?; echo "test_gpu_kernels rc $krc ($(el) s)"
grep -E "ffn_in|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -40
timeout 90 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; mrc=$?; echo "test_gpu_model rc $mrc ($(el) s)"
grep -E "FAILED|PASSED|ERROR" $L/model.log | tail -6
tt_wt103_spec specs/s34-wt103.yaml 600
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > /dev/null
rm -rf /tmp/ck-ncu; timeout 60 build-gpu/tt-train specs/s34-wt103.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 40 -q > $L/warm.log 2>&1
echo "warm-up (the products' algorithms recorded) rc $? ($(el) s)"
for e in 0 1; do
  rm -rf /tmp/ck-ncu
  TT_FFN_IN=$e timeout 90 ncu --metrics gpu__time_duration.sum --clock-control none \
      -k regex:'ffn_in|ffn_act|bias_colsum' -s 12 -c 36 --csv \
      build-gpu/tt-train specs/s34-wt103.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 8 -q > $L/ncu-ffn$e.csv 2> $L/ncu-ffn$e.err
  echo "== ncu TT_FFN_IN=$e rc $? ($(el) s)"
  python3 - $L/ncu-ffn$e.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit("no rows")
h = rows[0]; n, u, v = h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value")
sc = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}
t, c = collections.defaultdict(list), collections.Counter()
for r in rows[1:]: t[r[n].split("(")[0][:70]].append(float(r[v].replace(",", "")) * sc[r[u]])
for k, x in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    x.sort(); print(f"  {k:70s} n {len(x):3d} median {x[len(x)//2]:8.1f} us  min {x[0]:8.1f}")
PY
done
[ $krc = 0 ] && [ $mrc = 0 ] && BASE=build-gpu BASE_ENV=TT_FFN_IN=0 REPS=2 SPECS="wt103 ptb ptb-b120" timeout $((420 - $(el))) \
    bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals vs TT_FFN_IN=0 rc $? ($(el) s)"; grep -E "rep|launches|wt103|ptb" $L/goals.txt | cut -c1-170 | head -20
[ $(el) -lt 480 ] && for e in 0 1; do
    TT_FFN_IN=$e timeout 40 build-gpu/tt-bench specs/s34-wt103.yaml --profile > $L/profile-wt103-ffn$e.txt 2>&1
    echo "== wt103 TT_FFN_IN=$e"; grep -E "^ffn|as trained|^launches" $L/profile-wt103-ffn$e.txt | cut -c1-130
done
rm -f specs/s34-wt103.yaml
echo "total $(el) s"
gzip -f $L/*.log $L/*.csv 2>/dev/null
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
