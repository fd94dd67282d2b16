#!/usr/bin/env bash
# Configures and builds eco into build/ (binaries in build/bin/). Arguments
# go to cmake; TARGETS (space-separated) limits what ninja builds (default:
# everything, tests and benchmarks included).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
# Depend mode: a cache miss costs no second run of the preprocessor.
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}
# Two cores, large translation units: more jobs than cores only thrashes.
# shellcheck disable=SC2086 # TARGETS is a list
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${TARGETS:-}
