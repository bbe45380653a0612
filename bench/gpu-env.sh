# Sourced by the bench scripts on the GPU machine, where libyaml and CMocka are missing: unpacks
# the .debs that ../shared/scripts/fetch-debs.sh .deps downloads (device tool: carry: [".deps"])
# and points CMake, pkg-config and the loader at them. Does nothing where .deps is absent.
if [ -d .deps ]; then
    tt_deps=/tmp/tt-deps
    mkdir -p "$tt_deps"
    for f in .deps/*.deb; do dpkg -x "$f" "$tt_deps"; done
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
