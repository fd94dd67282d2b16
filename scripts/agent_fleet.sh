#!/usr/bin/env bash
# scripts/agent_fleet.sh — a fleet of agent clusters for tests and scale
# rehearsals (docs/agent.md, "Fleet mode"): SIMS kube-sim processes of
# PER_SIM clusters each (one process would have to hold every agent's
# ready watches), every cluster registered at the hub as an agent cluster
# with a bootstrap token, and AGENTS `eco agent --fleet` processes sharing
# the clusters between them. `start` returns once every agent is connected
# to the hub (it fails, saying why, when one is not within WAIT seconds).
#
#   HUB_API=http://127.0.0.1:9015 scripts/agent_fleet.sh start
#   scripts/agent_fleet.sh stop
#
# Knobs: SIMS=2 PER_SIM=50 AGENTS=2 PROVIDER=fleet LABEL=edge WAIT=120
# WORK=/tmp/eco-agent-fleet BIN=build/bin (relative paths are the repo's);
# HUB_CA=FILE when the hub's agent port serves TLS. The agents dial the
# hub the bootstrap answer names. Clusters are named s<sim>-c<n>; their
# kubeconfigs are WORK/sim-<sim>/NAME.yaml. Needs curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bin}
WORK=${WORK:-/tmp/eco-agent-fleet}
HUB_API=${HUB_API:-http://127.0.0.1:9015}
SIMS=${SIMS:-2}
PER_SIM=${PER_SIM:-50}
AGENTS=${AGENTS:-2}
PROVIDER=${PROVIDER:-fleet}
LABEL=${LABEL:-edge}
WAIT=${WAIT:-120}
HUB_CA=${HUB_CA:-}

die() {
  echo "agent_fleet: $*" >&2
  exit 1
}

# Stops what an earlier start began (its pid files only) and waits for it.
stop() {
  local f pid
  for f in "$WORK"/*.pid; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    fi
    rm -f "$f"
  done
}

post() {  # path json -> body; fails on an unexpected status (409: there already)
  local out code body
  out=$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' -d "$2" "$HUB_API$1") ||
    die "POST $1: no answer from $HUB_API"
  code=${out##*$'\n'}
  body=${out%$'\n'*}
  [[ $code == 2* || $code == 409 ]] || die "POST $1: $code $body"
  printf '%s' "$body"
}

# Waits until `cond` (a command) holds, or fails with `what` and a log.
wait_for() {  # what log cond...
  local what=$1 log=$2
  shift 2
  for _ in $(seq 1 $((WAIT * 10))); do
    "$@" && return 0
    sleep 0.1
  done
  echo "agent_fleet: $what did not happen within ${WAIT}s; the end of $log:" >&2
  tail -n 20 "$log" >&2 || true
  exit 1
}

sim_ready() { grep -q 'kube-sim: serving' "$WORK/sim-$1.log"; }

# Every cluster of agent process $1 has connected (or it is gone: caught below).
agents_connected() {
  local want have
  want=$(find "$WORK/agents-$1" -name '*.yaml' | wc -l)
  have=$(grep -c 'connected to the hub as' "$WORK/agents-$1.log" || true)
  kill -0 "$(cat "$WORK/agents-$1.pid")" 2>/dev/null || return 0
  ((have >= want))
}

start() {
  command -v curl >/dev/null || die "needs curl"
  command -v python3 >/dev/null || die "needs python3"
  [[ -x $BIN/kube-sim && -x $BIN/eco ]] || die "no kube-sim and eco in $BIN (BIN=...)"
  [[ -n $WORK && $WORK != / ]] || die "WORK must name a directory of its own"
  stop
  rm -rf "$WORK" && mkdir -p "$WORK"
  post /v2/cluster-providers "{\"metadata\":{\"name\":\"$PROVIDER\"}}" >/dev/null
  local s
  for s in $(seq 1 "$SIMS"); do
    mkdir -p "$WORK/sim-$s"
    "$BIN/kube-sim" --port 0 --clusters "$PER_SIM" --name-prefix "s$s-c" \
      --kubeconfig-dir "$WORK/sim-$s" >"$WORK/sim-$s.log" 2>&1 &
    echo $! >"$WORK/sim-$s.pid"
  done
  # Its ready line comes after its kubeconfigs are written and it listens.
  for s in $(seq 1 "$SIMS"); do
    wait_for "kube-sim $s serving" "$WORK/sim-$s.log" sim_ready "$s"
  done
  # The clusters are dealt round-robin to the agent processes.
  local i=0 kc name a boot
  for kc in "$WORK"/sim-*/*.yaml; do
    name=$(basename "$kc" .yaml)
    a=$((i % AGENTS + 1))
    mkdir -p "$WORK/agents-$a"
    cp "$kc" "$WORK/agents-$a/$name.yaml"
    post "/v2/cluster-providers/$PROVIDER/clusters" \
      "{\"metadata\":{\"name\":\"$name\"},\"spec\":{\"delivery\":\"agent\"}}" >/dev/null
    post "/v2/cluster-providers/$PROVIDER/clusters/$name/labels" "{\"clusterLabel\":\"$LABEL\"}" >/dev/null
    boot=$(post "/v2/cluster-providers/$PROVIDER/clusters/$name/agent-bootstrap" '{}')
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["token"]); open(sys.argv[2],"w").write(d["hub"])' \
      "$boot" "$WORK/hub" >"$WORK/agents-$a/$name.token" || die "bootstrap of $name: $boot"
    i=$((i + 1))
  done
  ((i > 0)) || die "no kubeconfigs in $WORK/sim-*"
  local hub ca=()
  hub=$(cat "$WORK/hub")
  [[ -n $HUB_CA ]] && ca=(--hub-ca "$HUB_CA")
  for a in $(seq 1 "$AGENTS"); do
    [[ -d $WORK/agents-$a ]] || continue
    "$BIN/eco" agent --fleet "$WORK/agents-$a" --hub "$hub" "${ca[@]}" >"$WORK/agents-$a.log" 2>&1 &
    echo $! >"$WORK/agents-$a.pid"
  done
  for a in $(seq 1 "$AGENTS"); do
    [[ -d $WORK/agents-$a ]] || continue
    wait_for "every cluster of agent process $a connected" "$WORK/agents-$a.log" agents_connected "$a"
    kill -0 "$(cat "$WORK/agents-$a.pid")" 2>/dev/null || {
      tail -n 20 "$WORK/agents-$a.log" >&2
      die "agent process $a exited"
    }
  done
  echo "agent_fleet: $i clusters on $SIMS kube-sim processes, $AGENTS agent processes, all connected to $hub; logs in $WORK"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
