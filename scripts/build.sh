#!/usr/bin/env bash
# Configures and builds eco into build/ (binaries in build/bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
# Two cores, large translation units: more jobs than cores only thrashes.
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
