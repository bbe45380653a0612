#!/usr/bin/env bash
# s18 call 3: the reference rounding as the fused TXL kernels (and the u/v terms scale): the failing seed, 60 random seeds unquiet,
# (the u/v lines), 400 seeds quiet (worst per variant), and the whole test_gpu_model once
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON && cmake --build build-gpu -j16 --target test_gpu_model) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(el) s"
TT_TEST_SEED=1873760847109754059 TT_TEST_ONLY=test_txl timeout 60 build-gpu/tests/test_gpu_model > $L/seed.log 2>&1; echo "failing seed: rc $?"; grep -E "^txl bf16 +segment 0 +r_(r|w)_bias" $L/seed.log
for i in $(seq 1 60); do TT_TEST_ONLY=test_txl timeout 30 build-gpu/tests/test_gpu_model > $L/s$i.log 2>&1 || echo "seed run $i rc $?"; grep -E "r_(r|w)_bias" $L/s$i.log >> $L/uv.txt; grep -E "^txl bf16 .*r_net.weight" $L/s$i.log >> $L/rnet.txt; grep -E "OVER" $L/s$i.log | head -3; [ $(el) -gt 250 ] && break; done
echo "unquiet runs done $(el) s"
awk '/terms. scale/ {print $(NF-2)}' $L/uv.txt | sort -g | awk '{a[NR]=$1} END {print "scale/norm: n", NR, "min", a[1], "median", a[int(NR/2)], "max", a[NR]}'
grep -v "terms' scale" $L/uv.txt | grep -oE "[0-9.]+e-[0-9]+ / 3e-02" | awk '{print $1}' | sort -g | awk '{a[NR]=$1} END {print "err/scale: n", NR, "median", a[int(NR/2)], "p90", a[int(NR*0.9)], "max", a[NR]}'
awk '/terms. scale/ {print $(NF-9)}' $L/uv.txt | sort -g | awk '{a[NR]=$1} END {print "err/norm: n", NR, "median", a[int(NR/2)], "p90", a[int(NR*0.9)], "max", a[NR]}'
grep -oE "[0-9.]+e-[0-9]+ / 3e-02" $L/rnet.txt | awk '{print $1}' | sort -g | awk '{a[NR]=$1} END {print "r_net (txl bf16*): n", NR, "median", a[int(NR/2)], "p90", a[int(NR*0.9)], "max", a[NR]}'
TT_TEST_SEEDS=300 TT_TEST_ONLY=test_txl timeout 200 build-gpu/tests/test_gpu_model > $L/seeds300.log 2>&1; echo "300 seeds rc $? ($(el) s)"; tail -22 $L/seeds300.log
timeout 120 build-gpu/tests/test_gpu_model > $L/model.log 2>&1; echo "test_gpu_model rc $? ($(el) s)"; grep -E "OVER|FAILED" $L/model.log | head -5; tail -1 $L/model.log
echo "total $(el) s"
rm -f $L/s*.log; gzip -f $L/*.log
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
