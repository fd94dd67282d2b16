#!/usr/bin/env bash
# Instantiate benchmark: time from the instantiate call to the AppContext
# handed to rsync, and the AppContext's size, for APPS apps x RESOURCES
# resources on each size of SIZES clusters. Results are JSON lines on stdout.
#   SIZES="10 100 1000 10000" APPS=10 RESOURCES=20 RUNS=3 bench/instantiate/run.sh
# STORE=etcd://127.0.0.1:2379 runs against an etcd instead of the embedded store.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-bench}
SIZES=${SIZES:-"10 100 1000 10000"}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD" eco_instantiate_bench >/dev/null
for n in $SIZES; do
  args=(--clusters "$n" --apps "${APPS:-10}" --resources "${RESOURCES:-20}" --runs "${RUNS:-3}")
  [[ -n "${STORE:-}" ]] && args+=(--store "$STORE")
  "$BUILD/bin/eco_instantiate_bench" "${args[@]}"
done
