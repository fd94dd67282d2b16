#!/usr/bin/env bash
# bench/rollout/run.sh — staged rollouts and fleet plans (see
# docs/performance.md, "Staged rollouts and plans"). Not a pass/fail test:
# prints a Markdown table.
#
# For each fleet size, eco_rollout_bench (bench/rollout/rollout_bench.cc)
# starts kube-sim with that many clusters and `eco serve`, onboards the
# fleet through the REST API, instantiates one DIG (APPS apps of a
# Deployment and RESOURCES-1 ConfigMaps, placed by label on every cluster)
# whose spec.rollout has percent waves WAVES and a last wave "rest", changes
# every app, times POST DIG/plan (full and summary), then POST update and
# follows the rollout wave by wave, watching kube-sim itself to know when
# each cluster was Ready.
#
# Knobs: SIZES="1000"  APPS=1  RESOURCES=5  WAVES=1,10,20,30
# EXTRA="..." (more eco_rollout_bench flags, every size), e.g.
#   EXTRA="--approval --hold-seconds 20" (RSS while the update waits after wave 1)
#   EXTRA="--no-rollout" (the same DIG all at once)
#   EXTRA="--plan-only --eco-arg=--ready-monitor=false" (plans only: fleets too
#   large for the ready monitor's sockets here)
#   EXTRA="--drift-samples 20 [--drift-policy enforce]" (after the update, a
#   Deployment deleted in 20 clusters: how soon the status says Drifted)
# EXTRA_<size>="..." (flags for one size only)
# NICE=-20 (driver, eco and kube-sim at that nice level; root only)
# BUILD=<repo>/build-bench  SKIP_BUILD=1  OUT=$BUILD/bench-results/rollout-<ts>
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=$BUILD/bin
SIZES=${SIZES:-1000}
OUT=${OUT:-$BUILD/bench-results/rollout-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  [[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD" eco kube-sim eco_rollout_bench >/dev/null
fi

rows=$OUT/rows.md
: >"$rows"
for n in $SIZES; do
  args=(--clusters "$n" --apps "${APPS:-1}" --resources "${RESOURCES:-5}" --waves "${WAVES:-1,10,20,30}"
        --work-dir "$OUT/run-$n" --row-file "$rows")
  per_size="EXTRA_$n"
  # shellcheck disable=SC2206
  [[ -n "${EXTRA:-}" ]] && args+=($EXTRA)
  # shellcheck disable=SC2206
  [[ -n "${!per_size:-}" ]] && args+=(${!per_size})
  run=("$BIN/eco_rollout_bench" "${args[@]}")
  [[ -n "${NICE:-}" ]] && run=(nice -n "$NICE" "${run[@]}")
  echo "[bench/rollout] $n clusters: ${run[*]}" >&2
  "${run[@]}" | tee -a "$OUT/results.jsonl" || true
done

{
  echo "| clusters | apps × objects | strategy | onboarding | instantiate | update | wave durations (s) | eco's gap after each wave (s) | plan, full: best (median) | plan, summary | eco RSS at rest | eco RSS, rollout waiting | eco peak RSS | eco peak sockets |"
  echo "|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"
  cat "$rows"
} | tee "$OUT/results.md"
echo "(results and logs in $OUT)" >&2
