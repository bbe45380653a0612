#!/usr/bin/env bash
# For the next session's first call (1 GPU), on branch s37-all (s37-fold with s37-profile-ops:
# tt-bench --profile's kernels by op): main, s37-td (main with
# s36-fwd-td: mla_fwd's wider grid where it covers under half the SMs, ptb and wt2) and s37-fold
# (s37-td with the fold of mla_bwd_wo's splits into its last block, four loads deep, and the
# strategy tuner's every-round rule), built side by side from `.snap/main` and `.snap/td`
# (`git archive main` and `git archive s37-td`, carried) and this tree. Every GPU unit and
# test_gpu_model's strategy test on this tree first, then ptb and wt103 alternating over the
# three builds until 560 s, late tok/s (gpu-env.sh's tt_late_rate), and the wt103 step's
# launches on this tree.
#   bash bench/raw/2026-12-07-s37/run19.sh   (repo root, on the GPU machine; carry .deps .data .snap)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
for s in td main; do
    (cmake -S .snap/$s -B build-$s -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-$s -j5 --target tt-train) > $L/build-$s.log 2>&1 &
done
tt_build_gpu || exit 1
build-gpu/ttgen specs/ptb.yaml | grep -A2 "^  mla_fwd_N\|^  mla_bwd_wo_N"
timeout 200 build-gpu/tests/test_gpu_kernels > $L/kernels.log 2>&1; krc=$?
echo "test_gpu_kernels rc $krc ($(tt_el) s)"; grep -E "mla_bwd .*bf16|FAILED|PASSED|NOT CAUGHT|ERROR" $L/kernels.log | head -12
timeout 90 env TT_TEST_ONLY=test_strategy_tuned build-gpu/tests/test_gpu_model > $L/model.log 2>&1
echo "test_gpu_model (strategy) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|rounds" $L/model.log | tail -4
timeout 60 env TT_TEST_ONLY=test_profile build-gpu/tests/test_bench_cli > $L/bench-cli.log 2>&1
echo "test_bench_cli (profile) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|by op" $L/bench-cli.log | tail -3
wait; echo "built $(tt_el) s"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/goal-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/goal-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
for rep in 1 2 3 4; do
    for s in ptb wt103; do
        for b in main td gpu; do
            [ $(tt_el) -gt 530 ] && break 3
            log=$L/$s-$b-$rep.log
            rm -rf /tmp/ck; timeout 60 build-$b/tt-train specs/goal-$s.yaml --checkpoint-dir /tmp/ck --log-every 20 > $log 2>&1
            echo "$s $b rep $rep: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | cut -c1-40)"
        done
    done
done | tee $L/runs.txt
# each build's median over its reps (of an even count, the middle two's mean), against main's
tt_medians() {
    awk '$3 == "rep" && $8 > 0 { k = $1 " " $2; n[k]++; v[k, n[k]] = $8; spec[$1] = 1 }
        END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                  if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
                  med[k] = m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2 }
              for (s in spec) for (b = 1; b <= 3; b++) { split("main td gpu", bs, " "); k = s " " bs[b]
                  if (k in med) printf "%s %s median %.0f tok/s of %d reps%s\n", s, bs[b], med[k], n[k],
                      (s " main") in med ? sprintf(", %.3fx main", med[k] / med[s " main"]) : "" } }' "$1"
}
tt_medians $L/runs.txt | tee $L/medians.txt
timeout $((590 - $(tt_el))) build-gpu/tt-bench specs/goal-wt103.yaml --profile > $L/profile-wt103.txt 2>&1
grep '^launches\|^kernels by op' $L/profile-wt103.txt
rm -f specs/goal-*.yaml
tt_call_end
