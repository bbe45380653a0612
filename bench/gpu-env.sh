# Sourced by the bench scripts on the GPU machine, where libyaml and CMocka are missing: unpacks
# the .debs that ../shared/scripts/fetch-debs.sh .deps downloads (device tool: carry: [".deps"])
# and points CMake, pkg-config and the loader at them. Does nothing where .deps is absent.
if [ -d .deps ]; then
    tt_deps=/tmp/tt-deps
    mkdir -p "$tt_deps"
    for f in .deps/*.deb; do dpkg -x "$f" "$tt_deps"; done
    # zlib1g-dev's libz.so links to the runtime package's file, which is the machine's: without
    # it the linker takes libz.a, which is not position-independent (libtt.so cannot use it)
    tt_libz=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -e "$tt_deps/usr/lib/x86_64-linux-gnu/libz.so" ] || [ -z "$tt_libz" ] ||
        ln -sf "$tt_libz" "$tt_deps/usr/lib/x86_64-linux-gnu/libz.so"
    export CMAKE_PREFIX_PATH="$tt_deps/usr" PKG_CONFIG_SYSROOT_DIR="$tt_deps"
    export PKG_CONFIG_PATH="$tt_deps/usr/lib/x86_64-linux-gnu/pkgconfig:$tt_deps/usr/share/pkgconfig"
    export LD_LIBRARY_PATH="$tt_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
export TTGEN_CACHE_DIR=${TTGEN_CACHE_DIR:-/tmp/tt-cache}

# tt_local_spec SRC DST [sed arguments...]: a variant of spec SRC written to DST (in specs/, so
# relative paths keep working), its corpora read from .data/ (carried to the GPU machine) when
# that exists, with the given sed edits applied on top.
tt_local_spec() {
    local src=$1 dst=$2 data=../shared/data
    shift 2
    [ -d .data ] && data=.data
    sed -e "s|../../shared/data|../$data|" "$@" "$src" > "$dst"
}

# The wt103 shapes on bench/zipf_corpus.py's synthetic corpus (WikiText-103 is not here): a corpus
# with Zipf word frequencies and exactly wt103's vocabulary, written once.
tt_wt103_data=/tmp/wt103-zipf
tt_wt103_corpus() {
    python3 bench/zipf_corpus.py "$tt_wt103_data" --vocab 267735 --cutoffs 20000,40000,200000
}
# tt_wt103_spec DST STEPS: specs/wt103.yaml on that corpus, STEPS steps, validation only at the
# end (a checkpoint is written at the end whatever the spec says: --checkpoint-dir says where)
tt_wt103_spec() {
    local data=$tt_wt103_data
    tt_local_spec specs/wt103.yaml "$1" -e "s/steps: 200000/steps: $2/" \
        -e "s/eval_interval: 4000/eval_interval: 0/" -e "s|^  train: .*|  train: $data/train.txt|" \
        -e "s|^  valid: .*|  valid: $data/valid.txt|" -e "s|^  test: .*|  test: $data/test.txt|"
    if ! grep -q "^  steps: $2\$" "$1" || ! grep -q "^  train: $data/train.txt\$" "$1"; then
        echo "tt_wt103_spec: specs/wt103.yaml changed: the edits of $1 did not apply"
        exit 1
    fi
}
# tt_txl_wt103_spec DST STEPS: specs/txl-wt103-base.yaml on the same corpus, STEPS steps,
# validation only at the end.
tt_txl_wt103_spec() {
    local data=$tt_wt103_data
    sed -e "s/steps: 200000/steps: $2/" -e "s/eval_interval: 4000/eval_interval: 0/" \
        -e "s|^  train: .*|  train: $data/train.txt|" -e "s|^  valid: .*|  valid: $data/valid.txt|" \
        -e "s|^  test: .*|  test: $data/test.txt|" specs/txl-wt103-base.yaml > "$1"
    if ! grep -q "^  steps: $2\$" "$1" || ! grep -q "^  train: $data/train.txt\$" "$1"; then
        echo "tt_txl_wt103_spec: specs/txl-wt103-base.yaml changed: the edits of $1 did not apply"
        exit 1
    fi
}
# tt_lm1b_body_spec DST STEPS: lm1b.yaml's body (D 1024, 8 layers, R 40, 2 cores, N 80, F 2100,
# batch 32) on PTB's words and a full softmax (its own vocabulary and corpus are not here): the
# shape issue 17 measured against PyTorch; validation only at the end.
tt_lm1b_body_spec() {
    local data=../shared/data
    [ -d .data ] && data=.data
    cat > "$1" <<EOS
model:
  kind: tensorized
  vocab: data
  d_model: 1024
  layers: 8
  rank: 40
  cores: 2
  seq_len: 80
  d_inner: 2100
  dropout: 0.1
train:
  batch: 32
  steps: $2
  precision: bf16
  eval_interval: 0
data:
  train: ../$data/ptb/ptb.train.txt.gz
  valid: ../$data/ptb/ptb.valid.txt
EOS
}
# tt_steady_rate LOG: tt-train's tokens/s over its progress lines after the first (which holds
# the start-up), each window the same number of steps, so the harmonic mean of their rates
tt_steady_rate() {
    grep '^step [0-9]*/' "$1" | awk '{ for (i = 2; i <= NF; i++) if ($i == "tok/s") r[++n] = $(i - 1) }
        END { for (i = 2; i <= n; i++) s += 1 / r[i]; if (n > 1) printf "%.0f", (n - 1) / s }'
}

# tt_late_rate LOG: the median of the last five progress windows' tokens/s (the first windows
# hold the products' timing and graph captures, and a capture of new cluster sizes can land in
# any window: the median leaves it out)
tt_late_rate() {
    grep '^step [0-9]*/' "$1" | awk '{ for (i = 2; i <= NF; i++) if ($i == "tok/s") print $(i - 1) }' |
        tail -5 | sort -n | awk '{ r[NR] = $1 } END { if (NR) print r[int((NR + 1) / 2)] }'
}
# tt_gpu_test LOG TIMEOUT PATTERN BINARY [VAR=value...]: build-gpu/tests/BINARY with those
# variables, its output in $L/LOG.log; a line with its exit status and the call's seconds so far,
# then the last 12 of its lines that match PATTERN
tt_gpu_test() {
    local log=$1 t=$2 pat=$3 bin=$4
    shift 4
    timeout $t env "$@" build-gpu/tests/$bin > $L/$log.log 2>&1
    echo "$bin ($log) rc $? ($(tt_el) s)"
    grep -E "$pat" $L/$log.log | cut -c1-150 | tail -12
}
# tt_train_one LABEL SPEC REP [VAR=value...]: one tt-train run of build-gpu (or of the build
# directory in tt_train_build) on specs/t-SPEC.yaml (its log $L/SPEC-LABEL-REP.log), then a line
# "SPEC LABEL rep REP: rc R late RATE tok/s; valid ppl P; device memory: M MiB (S s)" that
# tt_medians reads
tt_train_one() {
    local label=$1 spec=$2 rep=$3 log=$L/$2-$1-$3.log
    shift 3
    rm -rf /tmp/ck-t
    env "$@" timeout 120 ${tt_train_build:-build-gpu}/tt-train specs/t-$spec.yaml --checkpoint-dir /tmp/ck-t --log-every 20 > $log 2>&1
    echo "$spec $label rep $rep: rc $? late $(tt_late_rate $log) tok/s; $(grep 'valid ppl' $log | tail -1 | grep -o 'valid ppl [0-9.]*'); $(grep -o 'device memory: [0-9.]* MiB' $log) ($(tt_el) s)"
}
# tt_medians FILE: each SPEC LABEL's median late rate over its reps in FILE (tt_train_one's lines)
tt_medians() {
    awk '$3 == "rep" && $8 > 0 { k = $1 " " $2; n[k]++; v[k, n[k]] = $8 }
        END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                  if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
                  printf "%s: median %.0f tok/s of %d\n", k, m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2, m } }' "$1" | sort
}
# tt_mfu RATE LOG: RATE tokens/s as MFU, from tt-train's line "MFU ... of CARD's P TFLOP/s ...
# (train FLOPs F MFLOP/token)"
tt_mfu() {
    awk -v r="$1" '$1 == "MFU" { for (i = 2; i <= NF; i++) { if ($i == "TFLOP/s") p = $(i - 1)
        if ($i ~ /FLOP\/token/) f = $(i - 1) * ($i ~ /^G/ ? 1e9 : 1e6) } }
        END { if (p && f) printf "%.1f%%", 100 * r * f / (p * 1e12); else print "-" }' "$2"
}

# step NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log, adds a line (ok or the
# exit status, and the seconds) to the array summary, prints the log's end; returns the status.
step() {
    local name=$1
    shift
    local t0=$(date +%s.%N)
    "$@" > "$logs/$name.log" 2>&1
    local rc=$?
    local dt=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
    summary+=("$(printf '%-28s %-6s %6s s' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL:$rc)" "$dt")")
    tail -n ${TT_STEP_TAIL:-40} "$logs/$name.log"
    return $rc
}

# A device call's script: tt_call_begin makes its log folder L=$OUT/logs (what comes back), starts
# its clock (tt_el: the seconds since) and writes the card's name and driver to $L/gpu.txt;
# tt_build_gpu builds build-gpu/ with the tests (its log $L/build.log, its end shown on failure);
# tt_call_end gzips the logs and CSVs and packs $L into $OUT/logs.tar.gz.
tt_call_begin() {
    L=$OUT/logs
    mkdir -p "$L"
    tt_t0=$(date +%s)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$L/gpu.txt"
}
tt_el() { echo $(( $(date +%s) - tt_t0 )); }
tt_build_gpu() {
    (cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_BUILD_TESTS=ON &&
        cmake --build build-gpu -j16) > "$L/build.log" 2>&1 || { tail -30 "$L/build.log"; return 1; }
    echo "built $(tt_el) s"
}
# tt_build_snap_bg DIR: builds DIR's tt-train (a snapshot of another commit, e.g. .snap/main
# from `git archive main`) into build-main/ in the background, its log $L/build-main.log; its
# process id in tt_bm for `wait`.
tt_build_snap_bg() {
    (cmake -S "$1" -B build-main -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
        cmake --build build-main -j6 --target tt-train) > "$L/build-main.log" 2>&1 &
    tt_bm=$!
}
# tt_wait_snap: waits for tt_build_snap_bg's build (none started: returns at once); when it
# failed, the end of its log and status 1.
tt_wait_snap() {
    [ -n "${tt_bm:-}" ] || return 0
    wait "$tt_bm" || { tail -20 "$L/build-main.log"; return 1; }
}
tt_call_end() {
    echo "total $(tt_el) s"
    gzip -f "$L"/*.log "$L"/*.csv 2>/dev/null
    tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs 2>/dev/null
    rm -rf "$L"
}

# tt_ncu_durations CSV: an ncu --csv run of gpu__time_duration.sum, each kernel's launches (the
# name to its first parenthesis) as count, median and minimum in us, the largest total first.
tt_ncu_durations() {
    python3 - "$1" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no kernels in " + sys.argv[1])
h = rows[0]
n, u, v = h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value")
sc = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}
t = collections.defaultdict(list)
for r in rows[1:]:
    t[r[n].split("(")[0][:70]].append(float(r[v].replace(",", "")) * sc[r[u]])
for k, x in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    x.sort()
    print(f"  {k:70s} n {len(x):3d} median {x[len(x) // 2]:8.1f} us  min {x[0]:8.1f}")
PY
}

# tt_same_bits VAR...: ptb.yaml trained 300 steps with every VAR 0 and with every VAR 1
# (environment switches between ways to the same bits), the final checkpoints' files compared by
# SHA-256; prints one line and returns non-zero when they differ. Needs build-gpu/ and L
# (tt_call_begin).
tt_same_bits() {
    local e v spec=specs/same-bits-ptb.yaml tag=${1:?tt_same_bits VAR...}
    tt_local_spec specs/ptb.yaml $spec -e "s/eval_interval: 1000/eval_interval: 0/" \
        -e "s/steps: 40000/steps: 300/" -e "s/^\(  checkpoint: .*interval: \)[0-9]*}/\1300}/"
    for e in 0 1; do
        local set=()
        for v in "$@"; do set+=("$v=$e"); done
        rm -rf /tmp/ck-same-$e
        env "${set[@]}" timeout 90 build-gpu/tt-train $spec --checkpoint-dir /tmp/ck-same-$e -q \
            > "$L/same-$tag-$e.log" 2>&1
        echo "ptb 300 steps ${set[*]} rc $?"
        (cd /tmp/ck-same-$e/step-00000300 && sha256sum *) > "$L/same-$tag-$e.sha" 2>&1
    done
    rm -f $spec
    if cmp -s "$L/same-$tag-0.sha" "$L/same-$tag-1.sha"; then
        echo "$* 0 and 1: checkpoints identical ($(wc -l < "$L/same-$tag-0.sha") files)"
    else
        echo "$* 0 and 1: CHECKPOINTS DIFFER"
        diff "$L/same-$tag-0.sha" "$L/same-$tag-1.sha" | head
        return 1
    fi
}
