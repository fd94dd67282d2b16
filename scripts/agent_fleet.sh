#!/usr/bin/env bash
# scripts/agent_fleet.sh — a fleet of agent clusters for tests and scale
# rehearsals (docs/agent.md, "Fleet mode"): SIMS kube-sim processes of
# PER_SIM clusters each (one process would have to hold every agent's
# ready watches), every cluster registered at the hub as an agent cluster
# with a bootstrap token, and AGENTS `eco agent --fleet` processes sharing
# the clusters between them.
#
#   HUB_API=http://127.0.0.1:9015 scripts/agent_fleet.sh start
#   scripts/agent_fleet.sh stop
#
# Knobs: SIMS=2 PER_SIM=50 AGENTS=2 PROVIDER=fleet LABEL=edge
# WORK=/tmp/eco-agent-fleet BIN=build/bin; the agents dial the hub the
# bootstrap answer names. Needs curl and python3.
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

stop() {
  for f in "$WORK"/*.pid; do
    [[ -f $f ]] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

post() {  # path json -> body; fails on an unexpected status
  local out code
  out=$(curl -sS -w '\n%{http_code}' -H 'Content-Type: application/json' -d "$2" "$HUB_API$1")
  code=${out##*$'\n'}
  body=${out%$'\n'*}
  if [[ $code != 2* && $code != 409 ]]; then
    echo "agent_fleet: POST $1: $code $body" >&2
    return 1
  fi
  printf '%s' "$body"
}

start() {
  stop
  rm -rf "$WORK" && mkdir -p "$WORK"
  post /v2/cluster-providers "{\"metadata\":{\"name\":\"$PROVIDER\"}}" >/dev/null
  for s in $(seq 1 "$SIMS"); do
    mkdir -p "$WORK/sim-$s"
    "$BIN/kube-sim" --port 0 --clusters "$PER_SIM" --name-prefix "s$s-c" \
      --kubeconfig-dir "$WORK/sim-$s" >"$WORK/sim-$s.log" 2>&1 &
    echo $! >"$WORK/sim-$s.pid"
  done
  for s in $(seq 1 "$SIMS"); do
    for _ in $(seq 1 100); do
      [[ $(ls "$WORK/sim-$s"/*.yaml 2>/dev/null | wc -l) -ge $PER_SIM ]] && break
      sleep 0.1
    done
  done
  # The clusters are dealt round-robin to the agent processes.
  local i=0
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
      "$boot" "$WORK/hub" >"$WORK/agents-$a/$name.token"
    i=$((i + 1))
  done
  hub=$(cat "$WORK/hub")
  for a in $(seq 1 "$AGENTS"); do
    [[ -d $WORK/agents-$a ]] || continue
    "$BIN/eco" agent --fleet "$WORK/agents-$a" --hub "$hub" >"$WORK/agents-$a.log" 2>&1 &
    echo $! >"$WORK/agents-$a.pid"
  done
  echo "agent_fleet: $i clusters on $SIMS kube-sim processes, $AGENTS agent processes; logs in $WORK"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
