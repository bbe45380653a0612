#!/usr/bin/env bash
# s21 call 3 (same warm H100): two of the table's points trained again from scratch (no
# --resume, a fresh output folder) with the lr their family's search chose, for issue 21's
# "rerunning a point gives the same perplexity (GPU within 0.5%)".
set -uo pipefail
cd .snap/src
. bench/gpu-env.sh
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
B=/tmp/tt-bs
for fam in tensorized-causal tensorized-unmasked; do
  lr=$(awk -F, -v f=$fam '$1==f && $5==1 {print $2}' /tmp/sw/ptb/lr_search.csv)
  c=$([ $fam = tensorized-causal ] && echo true || echo false)
  timeout 250 $B/tt-bench sweep specs/ptb.yaml --rank 40 --cores 2 --causal $c --lr $lr --train-steps 15000 --eval-interval 1000 --patience 3 --out /tmp/rerun-$fam > $L/rerun-$fam.log 2>&1
  echo "$fam lr $lr rc $?"
  grep -h "^40,2," /tmp/sw/ptb/sweep.csv | awk -F, -v f=$fam '$15==f' | cut -d, -f7,13,15,17,19-22
  grep -h "^40,2," /tmp/rerun-$fam/sweep.csv | cut -d, -f7,13,15,17,19-22
  mkdir -p $OUT/rerun-$fam; cp /tmp/rerun-$fam/*.csv $OUT/rerun-$fam/
done
