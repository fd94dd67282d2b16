#!/usr/bin/env bash
# bench/k8s/run.sh — kube-sim and the k8s client at fleet scale (see
# docs/performance.md). Not a pass/fail test: prints a Markdown table.
#
# For each fleet size: kube-sim's start time (launch → ready line, kubeconfigs
# written) and idle RSS; then server-side applies per second that kube-sim
# serves to wrk (bench/k8s/apply.lua: every apply changes a ConfigMap, spread
# round-robin over the clusters), and that eco's own client achieves
# (eco_k8s_bench: one ClusterClient per cluster, a bounded pool of threads).
#
# Knobs: SIZES="1000 10000"  DURATION=10  CONNS=32 (wrk connections and
# client threads)  WRK_THREADS=1  SIM_THREADS=1 (kube-sim io threads)
# BUILD=<repo>/build-bench  SKIP_BUILD=1  OUT=$BUILD/bench-results/k8s-<ts>
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=$BUILD/bin
SIZES=${SIZES:-1000 10000}
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
WRK_THREADS=${WRK_THREADS:-1}
SIM_THREADS=${SIM_THREADS:-1}
OUT=${OUT:-$BUILD/bench-results/k8s-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

log() { echo "[bench/k8s] $*" >&2; }
command -v wrk >/dev/null || { echo "run.sh: wrk is not installed (scripts/deps.sh)" >&2; exit 1; }

if [[ -z "${SKIP_BUILD:-}" ]]; then
  [[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD" kube-sim eco_k8s_bench >/dev/null
fi

SIM_PID=""
stop_sim() { if [[ -n "$SIM_PID" ]]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""; fi; }
trap stop_sim EXIT

# start_sim N → sets PORT, START_MS
start_sim() {
  local n=$1 dir=$OUT/sim-$1
  rm -rf "$dir" && mkdir -p "$dir"
  local t0; t0=$(date +%s%N)
  "$BIN/kube-sim" --port 0 --clusters "$n" --threads "$SIM_THREADS" --kubeconfig-dir "$dir/kubeconfigs" \
    >"$dir/log" 2>&1 &
  SIM_PID=$!
  until grep -q "kube-sim: serving" "$dir/log" 2>/dev/null; do
    kill -0 "$SIM_PID" 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
    sleep 0.02
  done
  START_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
  PORT=$(grep -o '127.0.0.1:[0-9]*' "$dir/log" | head -1 | cut -d: -f2)
  KCDIR=$dir/kubeconfigs
}

rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

echo "| clusters | start (s) | idle RSS (MiB) | wrk applies/s | RSS after wrk (MiB) | kube-sim CPU (cores) | client applies/s | client/wrk |" >"$OUT/results.md"
echo "|---|---|---|---|---|---|---|---|" >>"$OUT/results.md"
for n in $SIZES; do
  start_sim "$n"
  sleep 3
  idle=$(rss_mib "$SIM_PID")
  log "$n clusters: started in ${START_MS} ms, idle RSS ${idle} MiB"
  c0=$(cpu_ticks "$SIM_PID")
  CLUSTERS=$n wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" -s "$HERE/apply.lua" "http://127.0.0.1:$PORT" \
    >"$OUT/wrk-$n.txt" 2>&1
  c1=$(cpu_ticks "$SIM_PID")
  wrk_rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$OUT/wrk-$n.txt")
  cores=$(awk -v a="$c0" -v b="$c1" -v d="$DURATION" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", (b-a)/hz/d}')
  after=$(rss_mib "$SIM_PID")
  log "$n clusters: wrk $wrk_rps applies/s, kube-sim used $cores cores"
  client_rps="-"; ratio="-"
  if [[ -x "$BIN/eco_k8s_bench" ]]; then
    "$BIN/eco_k8s_bench" --kubeconfig-dir "$KCDIR" --clusters 1000 --threads "$CONNS" --seconds "$DURATION" \
      >"$OUT/client-$n.txt" 2>&1 || true
    client_rps=$(awk '/applies\/s/ {printf "%.0f", $2}' "$OUT/client-$n.txt")
    [[ -n "$client_rps" && "$wrk_rps" -gt 0 ]] && ratio=$(awk -v a="$client_rps" -v b="$wrk_rps" 'BEGIN {printf "%.2f", a/b}')
    log "$n clusters: client $client_rps applies/s"
  fi
  echo "| $n | $(awk -v m="$START_MS" 'BEGIN {printf "%.2f", m/1000}') | $idle | $wrk_rps | $after | $cores | ${client_rps:--} | $ratio |" >>"$OUT/results.md"
  stop_sim
done
cat "$OUT/results.md"
echo "(results in $OUT)" >&2
