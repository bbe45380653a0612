#!/bin/sh
# Set-up on a fresh machine: installs the Debian packages the build needs (when missing and
# apt-get is there), checks for the CUDA toolkit, and configures the build in build/.
#   scripts/setup.sh [extra cmake arguments]
# TT_WERROR=ON in the environment makes warnings errors (-DTT_WERROR=ON), as CI does; unset: OFF.
# TT_REQUIRE_NCCL=ON makes a missing nccl.h an error (CI: the multi-GPU code must compile).
# A machine without a package registry can point CMAKE_PREFIX_PATH at unpacked .debs instead.
set -eu
cd "$(dirname "$0")/.."

cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
    echo "setup: no CUDA toolkit at $cuda (need NVRTC, cuBLAS, cudart; set CUDAToolkit_ROOT)" >&2
    exit 1
fi

missing=""
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
have_pc yaml-0.1 || missing="$missing libyaml-dev"
have_pc cmocka || missing="$missing libcmocka-dev"
have_pc zlib || missing="$missing zlib1g-dev"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox" # curve.png, tt-bench's plots
if [ -n "$missing" ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup: missing:$missing (no apt-get here: install them, or set CMAKE_PREFIX_PATH)" >&2
        exit 1
    fi
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "setup: installing$missing"
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda" \
    -DTT_WERROR="${TT_WERROR:-OFF}" -DTT_REQUIRE_NCCL="${TT_REQUIRE_NCCL:-OFF}" "$@" >/dev/null
echo "setup: configured build/ (CUDA toolkit $cuda)"
