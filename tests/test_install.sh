#!/bin/sh
# cmake --install into a temporary prefix, then examples/ built against that copy alone (CMake's
# find_package, and pkg-config) and run on a tiny model that the installed tt-train trains: its
# total must be what the installed tt-eval --text gives the same line. Also checks that libtt.so
# exports tt.h's API alone and that nothing installed names the source or build tree.
# Run by CTest (test_install):
#   test_install.sh SOURCE_DIR BUILD_DIR CMAKE CC LIBDIR BINDIR SANITIZE (1 or 0)
set -eu
src=$1 build=$2 cmake=$3 cc=$4 libdir=$5 bindir=$6 sanitize=$7

fail() {
    echo "test_install: $*" >&2
    exit 1
}

# outside the build tree, so that the prefix's own paths cannot name it
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix lib=$tmp/prefix/$libdir bin=$tmp/prefix/$bindir
export TTGEN_CACHE_DIR="$tmp/cache"

# An instrumented libtt needs its sanitizers' runtime first in the program that loads it: a
# program of the user's is built with the same flags.
san=""
if [ "$sanitize" = 1 ]; then
    san="-fsanitize=address,undefined"
    echo "TT_SANITIZE=ON: the examples are built with $san too"
fi

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
for f in "$lib/libtt.so" "$lib/libtt.so.1" "$prefix/include/tt.h" "$lib/pkgconfig/tt.pc" \
    "$lib/cmake/tt/ttConfig.cmake" "$lib/cmake/tt/ttConfigVersion.cmake" \
    "$bin/ttgen" "$bin/tt-train" "$bin/tt-eval" "$bin/tt-generate" "$bin/tt-bench"; do
    [ -e "$f" ] || fail "cmake --install did not install $f"
done

# The library exports the functions tt.h declares, and nothing else.
api=$(sed -n 's/^TT_API[^(]*[ *]\(tt_[a-z_]*\)(.*/\1/p' "$prefix/include/tt.h" | sort)
exported=$(nm -D --defined-only "$lib/libtt.so" | awk '{ print $3 }' | sort)
if [ -z "$api" ] || [ "$exported" != "$api" ]; then
    fail "libtt.so exports other symbols than tt.h's API: $(echo "$exported" | tr '\n' ' ')"
fi

# Nothing installed names the build tree, and no text the source tree either: the binaries name
# their sources in messages (__FILE__) and, for a debugger, in their debug information, which is
# left out here; neither is a dependency. Under the sanitizers the instrumented code names its
# sources too, the generated templates_embed.c among them: there only the RUNPATH is checked.
named=$(grep -rIlF -e "$src" -e "$build" "$prefix" || true)
[ -z "$named" ] || fail "installed files name the source or build tree: $named"
for f in "$bin"/* "$lib"/libtt.so.*.*; do
    runpath=$(readelf -d "$f" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]$/\1/p')
    case "$runpath" in
    *"$src"* | *"$build"*) fail "$f looks for libraries in the source or build tree: $runpath" ;;
    esac
    [ -n "$san" ] && continue
    objcopy --strip-debug "$f" "$tmp/stripped"
    if grep -qF "$build" "$tmp/stripped"; then
        fail "$f names the build tree: $(strings "$tmp/stripped" | grep -F "$build" | head -3)"
    fi
done

# examples/ with CMake, finding tt through CMAKE_PREFIX_PATH alone
"$cmake" -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror $san" \
    -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
found=$(sed -n 's/^tt_DIR:PATH=//p' "$tmp/examples/CMakeCache.txt")
[ "$found" = "$lib/cmake/tt" ] || fail "find_package(tt) found $found, not $lib/cmake/tt"
"$cmake" --build "$tmp/examples" >/dev/null

# and with pkg-config
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs tt)
echo "pkg-config --cflags --libs tt: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror $san "$src/examples/score_sentence.c" $flags -lm \
    -o "$tmp/score_sentence_pc"

# A tiny model (tests/test_lib.c's) of the words w0 .. w19, trained on the CPU for 12 steps.
corpus() {
    awk -v lines="$1" -v shift="$2" 'BEGIN {
        for (i = 0; i < lines; i++)
            for (j = 0; j < 10; j++)
                printf "w%d%s", (7 * (i + shift) + 3 * j + int(i / 5) * j * j) % 20,
                       j == 9 ? "\n" : " "
    }'
}
corpus 200 0 >"$tmp/train.txt"
corpus 9 3 >"$tmp/valid.txt"
cat >"$tmp/tiny.yaml" <<EOF
model:
  kind: tensorized
  d_model: 32
  layers: 2
  rank: 8
  cores: 2
  seq_len: 8
  d_inner: 64
  vocab: data
  dropout: 0.1
train:
  batch: 4
  steps: 12
  optimizer: {lr: 1.0e-2}
  schedule: {kind: cosine, warmup: 2}
  seed: 3
  precision: fp32
  eval_interval: 0
data:
  train: $tmp/train.txt
  valid: $tmp/valid.txt
EOF
"$bin/tt-train" "$tmp/tiny.yaml" --checkpoint-dir "$tmp/ckpt" --device cpu --quiet

# More tokens than one window of seq_len 8, and a word the vocabulary lacks.
sentence="w3 w10 w17 w4 w11 w18 w5 w12 w19 w6 zebra"
status=0
"$tmp/examples/score_sentence" "$tmp/tiny.yaml" "$tmp/ckpt" "$sentence" >"$tmp/out" ||
    status=$?
cat "$tmp/out"
[ "$status" = 0 ] || fail "score_sentence exited with $status"
grep -q '^perplexity [0-9.]*$' "$tmp/out" || fail "score_sentence printed no perplexity"
total=$(sed -n 's/^log-probability //p' "$tmp/out")
tokens=$(sed -n 's/^\([0-9]*\) tokens on .*/\1/p' "$tmp/out")

# tt-eval --text scores a file's lines after an <eos>, each ending in one: the same tokens.
printf '%s\n' "$sentence" >"$tmp/line.txt"
json=$("$bin/tt-eval" "$tmp/tiny.yaml" --checkpoint "$tmp/ckpt" --device cpu \
    --text "$tmp/line.txt" --json)
echo "tt-eval --text: $json"
want=$(echo "$json" | sed -n 's/.*"logprob":\([^,]*\),.*/\1/p')
want_tokens=$(echo "$json" | sed -n 's/.*"tokens":\([0-9]*\),.*/\1/p')
[ "$tokens" = "$want_tokens" ] || fail "score_sentence scored $tokens tokens, tt-eval $want_tokens"
awk -v a="$total" -v b="$want" 'BEGIN { d = a - b; exit !(a != "" && b < 0 &&
                                        (d < 0 ? -d : d) <= 1e-9 * -b) }' ||
    fail "score_sentence's log-probability $total is not tt-eval's $want"

# The pkg-config build, on the device named, prints the same.
LD_LIBRARY_PATH="$lib" "$tmp/score_sentence_pc" "$tmp/tiny.yaml" "$tmp/ckpt" "$sentence" cpu \
    >"$tmp/out_pc"
cmp -s "$tmp/out" "$tmp/out_pc" || fail "the pkg-config build printed otherwise: $(cat "$tmp/out_pc")"

# An error is libtt's one line, and a non-zero exit.
status=0
"$tmp/examples/score_sentence" "$tmp/tiny.yaml" "$tmp/none" "$sentence" >/dev/null \
    2>"$tmp/err" || status=$?
echo "a missing checkpoint: exit $status, $(cat "$tmp/err")"
if [ "$status" = 0 ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q '^score_sentence: ' "$tmp/err"
then
    fail "a missing checkpoint: exit $status, not libtt's one line: $(cat "$tmp/err")"
fi
echo "test_install: ok"
