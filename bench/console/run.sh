#!/usr/bin/env bash
# bench/console/run.sh — the DIG page at fleet scale (see docs/performance.md,
# "Console"). Not a pass/fail test: prints the results as JSON.
#
# Starts kube-sim with CLUSTERS clusters and `eco serve` without the ready
# monitor (a watch per cluster and kind does not fit this machine's socket
# limits at 10,000 clusters, issue 39: the grid then shows every object
# Applied and its readiness unknown, which costs the page the same), then
# console_bench.mjs onboards the fleet through the REST API, deploys APPS
# apps of one ConfigMap on every cluster, and measures the output=clusters
# answer and the DIG page in Debian's Chromium.
#
# Knobs: CLUSTERS=10000 APPS=10 RUNS=3 READY_MONITOR=false
# BUILD=<repo>/build  SKIP_BUILD=1  OUT=$BUILD/bench-results/console-<ts>
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BIN=$BUILD/bin
CLUSTERS=${CLUSTERS:-10000}
OUT=${OUT:-$BUILD/bench-results/console-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  ninja -C "$BUILD" eco kube-sim >/dev/null
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

ulimit -n 65536 2>/dev/null || true
"$BIN/kube-sim" --port 0 --clusters "$CLUSTERS" --name-prefix e- --kubeconfig-dir "$OUT/kubeconfigs" >"$OUT/kube-sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do grep -q "serving" "$OUT/kube-sim.log" && break; sleep 0.2; done
grep -q "serving" "$OUT/kube-sim.log" || { echo "kube-sim did not start" >&2; cat "$OUT/kube-sim.log" >&2; exit 1; }

port=$(free_port)
"$BIN/eco" serve --port "$port" --data-dir "$OUT/eco-data" --ready-monitor="${READY_MONITOR:-false}" >"$OUT/eco.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done

ECO_URL="http://127.0.0.1:$port" KUBECONFIGS="$OUT/kubeconfigs" SHOT="$OUT/dig-page.png" \
  node "$HERE/console_bench.mjs" | tee "$OUT/results.json"
echo "(results and logs in $OUT)" >&2
