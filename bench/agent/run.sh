#!/usr/bin/env bash
# bench/agent/run.sh — agent delivery at scale (see docs/performance.md,
# "Agent delivery"). Not a pass/fail test: prints Markdown tables.
#
# For each fleet size, eco_rsync_bench --delivery agent (driver in
# bench/rsync/rsync_bench.cc) starts one kube-sim process per SIM_SHARE
# clusters and `eco serve`, registers every cluster as an agent cluster with
# a bootstrap token, starts one `eco agent --fleet` process per
# FLEET_SHARE clusters, waits until every agent's stream is open, then
# instantiates one DIG of APPS apps x RESOURCES resources on every cluster
# and measures the time to all Applied and to all Ready (the agents' ready
# status live), eco's peak RSS, its peak open sockets, its CPU per
# resource, and then what the deployed fleet costs in CPU while nothing
# changes (IDLE_S seconds). At the size PARTITION_SIZE it then stops every agent process
# for PARTITION_S seconds and measures the protocol bytes of the resumption
# against those of the deployment. Then, at the same size, the same DIG in
# push mode (eco applying and watching itself) where it can run: above
# PUSH_READY_MAX clusters push runs without its ready monitor (six sockets
# per cluster would pass the 20,000 descriptors a process may hold here).
#
# Knobs: SIZES="1000 10000"  APPS=10  RESOURCES=10  SIM_SHARE=1250
# FLEET_SHARE=1250  AGENT_WORKERS=16  WORKERS=16 (eco's rsync workers)
# PARTITION_SIZE=1000 PARTITION_S=600 (PARTITION_S=0: none)  PUSH=1
# IDLE_S=60 (after Ready, what the quiet fleet costs in CPU; 0: not measured)
# PUSH_READY_MAX=2000  EXTRA="..." (more eco_rsync_bench flags, both modes)
# BUILD=<repo>/build-bench  SKIP_BUILD=1  OUT=$BUILD/bench-results/agent-<ts>
#
# Simulated agents hold no threads of their own (docs/agent.md, "Fleet
# mode"); the script still raises kernel.pid_max when run as root, for the
# kube-sims' and eco's threads at the largest sizes.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=$BUILD/bin
SIZES=${SIZES:-1000 10000}
SIM_SHARE=${SIM_SHARE:-1250}
FLEET_SHARE=${FLEET_SHARE:-1250}
PARTITION_SIZE=${PARTITION_SIZE:-1000}
PARTITION_S=${PARTITION_S:-600}
PUSH_READY_MAX=${PUSH_READY_MAX:-2000}
OUT=${OUT:-$BUILD/bench-results/agent-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  [[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD" eco kube-sim eco_rsync_bench >/dev/null
fi
if [[ $(id -u) == 0 && $(cat /proc/sys/kernel/pid_max) -lt 1000000 ]]; then
  sysctl -q -w kernel.pid_max=4194304 || echo "[bench/agent] could not raise kernel.pid_max" >&2
fi

agent_rows=$OUT/agent-rows.md
push_rows=$OUT/push-rows.md
: >"$agent_rows"
: >"$push_rows"
common() {  # size
  local n=$1
  args=(--clusters "$n" --apps "${APPS:-10}" --resources "${RESOURCES:-10}" --workers "${WORKERS:-16}"
        --sim-threads "${SIM_THREADS:-2}" --idle-seconds "${IDLE_S:-60}")
  # shellcheck disable=SC2206
  [[ -n "${EXTRA:-}" ]] && args+=($EXTRA)
  return 0
}
for n in $SIZES; do
  common "$n"
  sims=$(((n + SIM_SHARE - 1) / SIM_SHARE))
  procs=$(((n + FLEET_SHARE - 1) / FLEET_SHARE))
  a=("${args[@]}" --delivery agent --sims "$sims" --agent-procs "$procs" --agent-workers "${AGENT_WORKERS:-16}"
     --work-dir "$OUT/agent-$n" --row-file "$agent_rows")
  [[ $n == "$PARTITION_SIZE" && $PARTITION_S -gt 0 ]] && a+=(--partition-seconds "$PARTITION_S")
  echo "[bench/agent] $n agent clusters: eco_rsync_bench ${a[*]}" >&2
  "$BIN/eco_rsync_bench" "${a[@]}" | tee -a "$OUT/results.jsonl" || true
  if [[ ${PUSH:-1} == 1 ]]; then
    common "$n"
    p=("${args[@]}" --delivery push --sims "$sims" --skip-raw --work-dir "$OUT/push-$n" --row-file "$push_rows")
    ((n > PUSH_READY_MAX)) && p+=(--eco-arg=--ready-monitor=false --skip-ready)
    echo "[bench/agent] $n push clusters: eco_rsync_bench ${p[*]}" >&2
    "$BIN/eco_rsync_bench" "${p[@]}" | tee -a "$OUT/results.jsonl" || true
  fi
  rm -rf "$OUT/agent-$n/eco-data" "$OUT/push-$n/eco-data"
done

{
  echo "Agent delivery:"
  echo
  echo "| clusters | resources | delivery | to all Applied | to all Ready | eco CPU per resource | eco peak RSS | eco peak sockets | sockets per cluster | agents' peak RSS | kube-sims' peak RSS | resumption / full |"
  echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  cat "$agent_rows"
  echo
  echo "Push delivery, same DIG:"
  echo
  echo "| clusters | resources | onboarding | to all Applied | applied/s | to all Ready | eco CPU (cores) | kube-sim CPU (cores) | eco peak RSS | eco peak threads | raw applies/s | eco / raw |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  cat "$push_rows"
} | tee "$OUT/results.md"
echo "(results and logs in $OUT)" >&2
