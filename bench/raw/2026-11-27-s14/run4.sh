#!/usr/bin/env bash
# s14 call 4: txl units, txl alternating vs main (2 reps), step per kernel under ncu
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "commit $(cat ../commit.txt) against $(cat ../old.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
[ -x ../old/build-gpu/tt-train ] || { (cmake -S ../old -B ../old/build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build ../old/build-gpu -j16 --target tt-train tt-bench) > $L/build-old.log 2>&1 || { tail -30 $L/build-old.log; exit 1; }; }
ln -sfn "$PWD/.data" ../old/.data
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
TT_TEST_CONFIGS=txl timeout 250 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; echo "test_gpu_kernels (txl) rc $?"; grep -E "FAIL|ERROR|NOT CAUGHT|txl_attn_bwd" $L/kernels.log | head -20; tail -2 $L/kernels.log
sed -e "s/eval_interval: 4000/eval_interval: 0/" -e "s/steps: 200000/steps: 160/" \
    -e "s|^  train: .*|  train: $tt_wt103_data/train.txt|" -e "s|^  valid: .*|  valid: $tt_wt103_data/valid.txt|" \
    -e "s|^  test: .*|  test: $tt_wt103_data/test.txt|" specs/txl-wt103-base.yaml > specs/txl.yaml
cp specs/txl.yaml ../old/specs/
for rep in 1 2; do for b in old src; do
  rm -rf /tmp/ck-txl
  d=$([ $b = old ] && echo ../old || echo .)
  (cd $d && timeout 120 build-gpu/tt-train specs/txl.yaml --checkpoint-dir /tmp/ck-txl --log-every 20 > $L/train-txl-$b-$rep.log 2>&1)
  echo "train txl $b rep $rep rc $? late $(tt_late_rate $L/train-txl-$b-$rep.log); $(grep -E 'valid ppl' $L/train-txl-$b-$rep.log | tail -1)"
done; done
timeout 200 bash bench/profile-step.sh $L/prof txl-wt103 > $L/prof-step.txt 2>&1; echo "profile rc $?"
python3 - $L/prof/ncu-step.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; name, unit, val = h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value")
ks = []
for r in rows[1:]:
    v = float(r[val].replace(",", "")) * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r[unit]]
    ks.append((r[name].split("(")[0][:70], v))
# the last step: from the last adam back to the one before
ad = [i for i, k in enumerate(ks) if k[0].startswith("adam")]
step = ks[ad[-2] + 1: ad[-1] + 1]
tot = collections.Counter(); cnt = collections.Counter()
for k, v in step: tot[k] += v; cnt[k] += 1
print("last step: %d kernels, %.1f us" % (len(step), sum(v for _, v in step)))
for k, v in tot.most_common(30): print("%9.1f %4d %s" % (v, cnt[k], k))
PY
gzip -f $L/kernels.log $L/prof/ncu-step.csv $L/train-*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
