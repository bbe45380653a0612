#!/usr/bin/env bash
# s39 last call (1 GPU), on main (4abfbda's code with s37-td and s37-profile-ops merged): every
# kernel of one ptb.yaml step under Nsight Compute (bench/profile-step.sh), to size what launches
# and kernel ends cost at ptb's shapes (0.56 ms a step, 1,024 tokens) for the next session's
# plan; then ptb at batch 120 if time allows.
#   bash bench/raw/2026-12-07-s39/run5.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
tt_build_gpu || exit 1
timeout 150 bench/profile-step.sh $L/ptb ptb > /dev/null 2>&1; echo "profile-step ptb rc $? ($(tt_el) s)"
head -32 $L/ptb/step-breakdown.txt 2>/dev/null; tail -1 $L/ptb/step-breakdown.txt 2>/dev/null
if [ $(tt_el) -lt 120 ]; then
    timeout $((200 - $(tt_el))) bench/profile-step.sh $L/ptb-b120 ptb-b120 > /dev/null 2>&1
    echo "profile-step ptb-b120 rc $? ($(tt_el) s)"; head -14 $L/ptb-b120/step-breakdown.txt 2>/dev/null
    tail -1 $L/ptb-b120/step-breakdown.txt 2>/dev/null
fi
tt_call_end
