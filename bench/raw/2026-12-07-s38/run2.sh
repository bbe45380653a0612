#!/usr/bin/env bash
# For the next session's first call (1 GPU), on branch s38-all (main with s38-out-chunks and
# s37-profile-ops). First the GPU tests of both: test_gpu_model's test_output_chunks (the output
# layer in 1 KiB chunks against the CPU), its test_graph (the same bits in every mode, default
# chunks) and test_bench_cli's test_profile (kernels by op, through the driver now). Then one
# build under two settings, alternating: the output layer in chunks of a third of L2 (the
# default) against TT_OUT_CHUNK_KB=0 (every row at once, as main), wt103 shapes, ptb at batch
# 120, lm1b's body and ptb as shipped, three reps; each spec's median and ratio. Then the wt103
# step's profile both ways (softmax ms, the step, kernels by op).
#   bash bench/raw/2026-12-07-s38/run2.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 120 env TT_TEST_ONLY=test_output_chunks build-gpu/tests/test_gpu_model > $L/model-chunks.log 2>&1
echo "test_gpu_model (output chunks) rc $? ($(tt_el) s)"
grep -E "chunks|FAILED|PASSED|ERROR|OVER" $L/model-chunks.log | tail -14
timeout 90 env TT_TEST_ONLY=test_graph build-gpu/tests/test_gpu_model > $L/model-graph.log 2>&1
echo "test_gpu_model (graph) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR" $L/model-graph.log | tail -3
timeout 60 env TT_TEST_ONLY=test_profile build-gpu/tests/test_bench_cli > $L/bench-cli.log 2>&1
echo "test_bench_cli (profile) rc $? ($(tt_el) s)"; grep -E "FAILED|PASSED|ERROR|by op" $L/bench-cli.log | tail -4
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/prof-wt103.yaml 600
for kb in 0 "" 8192; do # 0: every row at once; "": the default chunks (a third of L2); 8 MiB
    f=$L/profile-wt103-${kb:-default}.txt
    timeout 60 env ${kb:+TT_OUT_CHUNK_KB=$kb} build-gpu/tt-bench specs/prof-wt103.yaml --profile > $f 2>&1
    echo "profile, chunks ${kb:-default}: $(grep '^softmax' $f | tr -s ' ')"
    grep 'as trained\|^launches\|^kernels by op' $f | cut -c1-160
done
rm -f specs/prof-wt103.yaml
BASE=build-gpu BASE_ENV=TT_OUT_CHUNK_KB=0 REPS=3 SPECS="wt103 ptb-b120 lm1b-body ptb" \
    timeout $((575 - $(tt_el))) bench/goals-check.sh $L/goals > $L/goals.txt 2>&1
echo "goals rc $? ($(tt_el) s)"
# each spec's median over its reps, the chunks' (ours) against every row at once (base)
awk '$3 == "rep" && $8 > 0 { k = $1 " " $2; n[k]++; v[k, n[k]] = $8; s[$1] = 1 }
    END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
              if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
              med[k] = m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2 }
          for (x in s) if ((x " base") in med && (x " ours") in med)
              printf "%s: all rows %.0f, chunks %.0f tok/s (medians of %d): %.3fx\n", x,
                  med[x " base"], med[x " ours"], n[x " ours"], med[x " ours"] / med[x " base"] }' \
    $L/goals/runs.txt | tee $L/medians.txt
grep -o '^[a-z0-9-]* [a-z]* rep 1.*valid ppl [0-9.]*' $L/goals/runs.txt | sed 's/: rc.*valid/: valid/'
tt_call_end
