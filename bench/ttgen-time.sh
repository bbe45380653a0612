#!/bin/sh
# Times ttgen on a spec: cold (empty cache: every kernel compiled by NVRTC) and cached (nothing
# compiled), five runs each, and prints the medians. Usage: bench/ttgen-time.sh [SPEC] [TTGEN]
set -eu
spec=${1:-specs/wt103.yaml}
ttgen=${2:-build/ttgen}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # prints wall seconds of one run
    s=$(date +%s.%N)
    "$ttgen" "$spec" --cache-dir "$dir/cache" -q
    e=$(date +%s.%N)
    awk "BEGIN { print $e - $s }"
}
cold=$(for i in 1 2 3 4 5; do rm -rf "$dir/cache"; run; done | median)
cached=$(for i in 1 2 3 4 5; do run; done | median)
echo "host: $(nproc) cores, $(uname -m); $($ttgen --version); spec $spec"
"$ttgen" "$spec" --cache-dir "$dir/cache" | tail -n 1
printf 'cold   %.3f s (median of 5)\ncached %.3f s (median of 5)\n' "$cold" "$cached"
