#!/usr/bin/env bash
# s15 call 6: txl-wt103-base against the eager PyTorch peer in one call (bench/txl-bench.sh), and
# Nsight Compute on the wt103 step's activation and cross-entropy kernels
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs
mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
echo "src $(cat ../commit.txt)"
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $(( $(date +%s) - T0 )) s"
TXL_BENCH=wt103 PEER_COMPILE=0 PEER_STEPS=30 timeout 200 bench/txl-bench.sh $L/txl > $L/txl-bench.txt 2>&1; echo "txl-bench rc $?"; tail -6 $L/txl-bench.txt
echo "txl $(( $(date +%s) - T0 )) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/w.yaml 40
rm -rf /tmp/ck-ncu
timeout $(( 280 - ($(date +%s) - T0) )) ncu --set full -k regex:'^(ffn_act_fwd|xent|residual_ln_fwd|embedding_sort)' --launch-skip 60 --launch-count 8 --clock-control none \
    build-gpu/tt-train specs/w.yaml --checkpoint-dir /tmp/ck-ncu --stop-after 3 -q > $L/ncu.txt 2> $L/ncu.err; echo "ncu rc $?"
grep -E '^  [a-z_]+_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput' $L/ncu.txt | head -80
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/logs.tar.gz -C $OUT logs 2>/dev/null; rm -rf $L
