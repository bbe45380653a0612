#!/usr/bin/env bash
# For the next session (1 GPU), on branch s45-io (diff `raw/2026-12-07-s45/s45-io.diff`): every
# step's uploads (tokens, routes, the dropout step, the optimizer's scalars, the ranks' flag) in
# one copy from a pinned block, and the scalars and sums back in one, in place of four to five
# copies up and two down from pageable memory. The GPU tests that cover it (test_gpu_model whole,
# test_gpu_repro: two runs, a resumed one, a checkpoint between CPU and GPU; test_gpu_lib), then
# tt-train of main's build (.snap/main) and the branch's, alternating, three reps: ptb.yaml,
# at batch 120, the wt103 shapes (the small steps first: the copies are a fixed cost a step);
# then the branch's `tt-bench --profile` line of the trained step's graph replayed back to back
# (what the host between steps costs: whether steps submitted ahead of the last one's
# download would pay).
# Before the call, here:
#   rm -rf .snap/main && mkdir -p .snap/main && git archive main -- . ':!bench/raw' ':!docs' | tar -x -C .snap/main
#   bash bench/raw/2026-12-07-s45/run7.sh   (repo root, on the GPU machine; carry .deps .data .snap/main)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_snap_bg .snap/main
tt_build_gpu || exit 1
wait $tt_bm || { tail -20 $L/build-main.log; exit 1; }
tt_gpu_test model 300 "FAILED|PASSED|ERROR" test_gpu_model
tt_gpu_test repro 200 "FAILED|PASSED|ERROR" test_train_cli TT_TEST_DEVICE=cuda
tt_gpu_test lib 120 "FAILED|PASSED|ERROR" test_lib TT_TEST_DEVICE=cuda
tt_gpu_test profile 90 "FAILED|PASSED|ERROR|replayed|parts" test_bench_cli TT_TEST_ONLY=test_profile
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/t-wt103.yaml 600
tt_local_spec specs/ptb.yaml specs/t-ptb.yaml -e "s/eval_interval: 1000/eval_interval: 0/" \
    -e "s/steps: 40000/steps: 1500/"
sed -e "s/batch: 32/batch: 120/" -e "s/steps: 1500/steps: 600/" specs/t-ptb.yaml > specs/t-ptb120.yaml
for rep in 1 2 3; do
    for s in ptb ptb120 wt103; do
        tt_train_build=build-main tt_train_one main $s $rep
        tt_train_one io $s $rep
    done
done | tee $L/ab.txt
tt_medians $L/ab.txt
for s in ptb ptb120 wt103; do # what the host between steps costs (the branch's replay_ms line)
    timeout 60 build-gpu/tt-bench specs/t-$s.yaml --profile > $L/profile-$s.txt 2>&1
    echo "profile $s rc $?: $(grep -E '^the step.s graph replayed' $L/profile-$s.txt)"
done
rm -f specs/t-*.yaml
tt_call_end
