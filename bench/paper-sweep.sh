#!/usr/bin/env bash
# Issue 21's table: the paper's question (perplexity against cost over rank and cores, with the
# mask and without, beside Transformer-XL) on PTB and WikiText-2, every point trained with a
# cosine schedule over its spec's K steps (PTB 40,000, WikiText-2 60,000: long enough that
# validation stops improving before the end; at 15,000 steps most points were still improving
# when the rate reached zero), validated every E, stopped after P validations without a new
# best, scored on the test split from its best weights; each family's learning rate chosen by
# the sweep's own search. Run from the repository's root:
#     bench/paper-sweep.sh DIR [TT-BENCH SWEEP OPTIONS...]
# writes DIR/ptb/ and DIR/wt2/ (sweep.csv, lr_search.csv, table.md, sweep.png/svg). Run it again
# after a stop and it goes on where it stopped (--resume); on a machine without a GPU over
# finished files it redraws the table and the plots from them. Options after DIR replace the
# grid's (a later option wins: `--causal false` runs the unmasked family alone, so that parts
# of the grid can run on several GPUs at once, each into its own DIR, their CSVs joined after:
# README, tt-bench sweep); PAPER_SWEEP_SPECS picks the corpora (default "ptb wt2").
set -euo pipefail
dir=${1:?usage: bench/paper-sweep.sh DIR [tt-bench sweep options...]}
shift
bench=${TT_BENCH:-build/tt-bench}
grid=(--rank 8,16,40,64,128 --cores 1,2,4 --causal true,false --txl --lr 1.25e-4,2.5e-4,5e-4,1e-3,2e-3
      --eval-interval 1000 --patience 3 --resume)
for spec in ${PAPER_SWEEP_SPECS:-ptb wt2}; do
    k=$(sed -n 's/^  steps: *//p' "specs/$spec.yaml") # train.steps
    [[ $k =~ ^[0-9]+$ ]] || { echo "paper-sweep.sh: specs/$spec.yaml: no one 'steps: N' line (train.steps)" >&2; exit 2; }
    "$bench" sweep "specs/$spec.yaml" "${grid[@]}" --train-steps $k "$@" --out "$dir/$spec"
done
