#!/usr/bin/env bash
# bench/rsync/run.sh — deployment throughput (see docs/performance.md,
# "Deployment (rsync)"). Not a pass/fail test: prints a Markdown table.
#
# For each fleet size, eco_rsync_bench (bench/rsync/rsync_bench.cc) starts
# kube-sim with that many clusters and `eco serve`, onboards the fleet
# through the REST API, instantiates one DIG of APPS apps x RESOURCES
# resources on every cluster, and measures the time to all Applied and to
# all Ready, eco's peak RSS and threads; then, with eco stopped, the rate at
# which a bare server-side-apply client with as many threads as rsync has
# workers applies the same objects to the same kube-sim.
#
# Knobs: SIZES="100 1000 10000"  APPS=10  RESOURCES=10  WORKERS=16 (rsync
# workers and raw client threads)  SIM_THREADS=2 (kube-sim io threads)
# STORE=etcd://127.0.0.1:2379 (default: eco's embedded store)
# EXTRA="--skip-ready ..." (more eco_rsync_bench flags, every size): --tls
# (kube-sim serves HTTPS: eco speaks HTTP/2 to it), --digs 2 (a second DIG
# of its own composite app on the same clusters), e.g.
#   EXTRA="--eco-cpus 0 --sim-cpus 1" (eco and the raw client on CPU 0,
#   kube-sim on CPU 1: is eco the bottleneck? see docs/performance.md)
# EXTRA_<size>="..." (flags for one size only), e.g.
#   EXTRA_10000="--eco-arg=--ready-monitor=false --skip-ready"
# (the ready monitor holds a socket per cluster and watched kind: 10,000
# clusters need ~80,000 descriptors in eco and in kube-sim, and kube-sim
# needs ~13 KB of memory per object it stores — see docs/performance.md)
# NICE=-20 (run the driver, eco and kube-sim at that nice level; root only)
# BUILD=<repo>/build-bench  SKIP_BUILD=1  OUT=$BUILD/bench-results/rsync-<ts>
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=$BUILD/bin
SIZES=${SIZES:-100 1000 10000}
OUT=${OUT:-$BUILD/bench-results/rsync-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  [[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD" eco kube-sim eco_rsync_bench >/dev/null
fi

rows=$OUT/rows.md
: >"$rows"
for n in $SIZES; do
  args=(--clusters "$n" --apps "${APPS:-10}" --resources "${RESOURCES:-10}" --workers "${WORKERS:-16}"
        --sim-threads "${SIM_THREADS:-2}" --work-dir "$OUT/run-$n" --row-file "$rows")
  [[ -n "${STORE:-}" ]] && args+=(--store "$STORE")
  per_size="EXTRA_$n"
  # shellcheck disable=SC2206
  [[ -n "${EXTRA:-}" ]] && args+=($EXTRA)
  # shellcheck disable=SC2206
  [[ -n "${!per_size:-}" ]] && args+=(${!per_size})
  run=("$BIN/eco_rsync_bench" "${args[@]}")
  [[ -n "${NICE:-}" ]] && run=(nice -n "$NICE" "${run[@]}")
  echo "[bench/rsync] $n clusters: ${run[*]}" >&2
  "${run[@]}" | tee -a "$OUT/results.jsonl" || true
done

{
  echo "| clusters | resources | onboarding | to all Applied | applied/s | to all Ready | eco CPU (cores) | kube-sim CPU (cores) | eco peak RSS | eco peak threads | raw applies/s | eco / raw | eco sockets per cluster |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  cat "$rows"
} | tee "$OUT/results.md"
echo "(results and logs in $OUT)" >&2
