#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: the full suite in
# build/, the unit tests again under ASan + UBSan in build-asan/, and the
# libFuzzer targets for a short time (FUZZ_SECONDS each, scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

scripts/deps.sh --test
export CCACHE_DIR=${CCACHE_DIR:-$PWD/.ccache}

echo "== build (RelWithDebInfo)"
BUILD_DIR=build scripts/build.sh

echo "== build (ASan + UBSan with clang: unit tests and the fuzz targets)"
# clang compiles this -O0 tree ~25% faster than GCC, and one tree serves the
# unit tests and the fuzz targets, so its libraries are compiled once.
CC=clang-14 CXX=clang++-14 BUILD_DIR=build-asan CMAKE_BUILD_TYPE=Debug scripts/build.sh \
  -DECO_SANITIZE=ON -DECO_UNIT_ONLY=ON -DECO_FUZZ=ON

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [[ -f tests/lsan.supp ]]; then export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp; fi

rc=0
echo "== unit tests under sanitizers"
ctest --test-dir build-asan -L unit --output-on-failure -j 2 || rc=1

echo "== fuzz targets, ${FUZZ_SECONDS:-30}s each"
scripts/fuzz.sh || rc=1

echo "== all tests (builds, sanitizer and fuzz runs took $(( $(date +%s) - start ))s)"
ctest --test-dir build --output-on-failure -j 2 || rc=1
exit $rc
