#!/usr/bin/env bash
# Session 35: the attention's strategy at the small shapes. ttgen's cost model puts ptb.yaml's
# fused attention at 5.6 us a layer against 40 us materialized, but Nsight Compute measured the
# fused kernels of a ptb layer at ~60 us (mla_fwd 18.5, mla_bwd_q 20.5, ...: 24 to 48 blocks,
# latency-bound). Here: ptb as shipped, ptb at batch 120 and the wt103 shapes, each trained with
# kernels.attention fused and materialized, alternating (build-gpu as built), and both ptb
# profiles (WT103=1: the wt103 shapes too, once a rep). Runs after run6.sh on the same machine (build-gpu kept), or builds.
#   bash bench/raw/2026-12-06-s35/run7.sh   (repo root, on the GPU machine; carry .deps .data)
set -uo pipefail
. bench/gpu-env.sh
tt_call_begin
[ -x build-gpu/tt-train ] || { (cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-gpu -j16 --target tt-train tt-bench) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }; }
echo "built $(tt_el) s"
mat() { # the spec with kernels.attention: materialized (a kernels: section added where none is)
    if grep -q '^kernels:' "$1"; then sed -e 's/^kernels:/kernels:\n  attention: materialized/' "$1" > "$2"
    else { cat "$1"; printf 'kernels:\n  attention: materialized\n'; } > "$2"; fi
}
tt_local_spec specs/ptb.yaml specs/s35-ptb-fused.yaml -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 1200/"
tt_local_spec specs/ptb.yaml specs/s35-ptb120-fused.yaml -e "s/batch: 32/batch: 120/" \
    -e "s/eval_interval: 1000/eval_interval: 0/" -e "s/steps: 40000/steps: 600/"
[ -f $tt_wt103_data/train.txt ] || tt_wt103_corpus > $L/corpus.txt
tt_wt103_spec specs/s35-wt103-fused.yaml 400
for s in ptb ptb120 wt103; do
    mat specs/s35-$s-fused.yaml specs/s35-$s-mat.yaml
    grep -q "attention: materialized" specs/s35-$s-mat.yaml || echo "not materialized: $s"
done
for rep in 1 2; do
  for s in ptb ptb120 ${WT103:+wt103}; do
    for k in fused mat; do
      rm -rf /tmp/ck7
      timeout 150 build-gpu/tt-train specs/s35-$s-$k.yaml --checkpoint-dir /tmp/ck7 --log-every 20 > $L/$s-$k-$rep.log 2>&1
      rc=$?; r=$(tt_late_rate $L/$s-$k-$rep.log)
      echo "$s $k rep $rep: rc $rc late $r tok/s; $(grep 'valid ppl' $L/$s-$k-$rep.log | tail -1) ($(tt_el) s)"
    done
  done
  [ $(tt_el) -gt 240 ] && break
done
for k in fused mat; do
  timeout 60 build-gpu/tt-bench specs/s35-ptb-$k.yaml --profile > $L/profile-ptb-$k.txt 2>&1
  echo "== profile ptb $k rc $?"; sed -n '3,14p' $L/profile-ptb-$k.txt
done
rm -f specs/s35-*.yaml
tt_call_end
