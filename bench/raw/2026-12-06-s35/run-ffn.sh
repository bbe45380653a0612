#!/usr/bin/env bash
# Session 35: s34's run5.sh (the fused FFN, v5 with the dropout threshold) on the branch
# s35-ffn-kb (s34-ffn-pipe-kb with main merged), from its snapshot in .snap/ffn
# (`git archive s35-ffn-kb | tar -x -C .snap/ffn`, carried with .deps and .data).
#   bash bench/raw/2026-12-06-s35/run-ffn.sh   (repo root, on the GPU machine)
set -uo pipefail
cd .snap/ffn || exit 1
ln -sfn ../../.deps .deps
ln -sfn ../../.data .data
exec bash bench/raw/2026-12-06-s34/run5.sh
