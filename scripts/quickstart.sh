#!/usr/bin/env bash
# First command for a new user: installs dependencies, builds eco, starts
# kube-sim (a simulated Kubernetes cluster, edge1) and `eco serve` on its
# embedded store, onboards an example composite app through the API with
# ecoctl, instantiates it, waits until the cluster reports it Ready and
# shows how to go on. Both keep running; `--stop` ends them.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${ECO_PORT:-9015}
RUN_DIR=${ECO_RUN_DIR:-$PWD/.quickstart}
SIM_PORT=${ECO_SIM_PORT:-9016}
PID_FILE=$RUN_DIR/eco.pid
SIM_PID_FILE=$RUN_DIR/kube-sim.pid
API=http://127.0.0.1:$PORT

stop_one() {  # PIDFILE NAME
  if [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; then
    kill "$(cat "$1")" && echo "$2 stopped"
  else
    echo "$2 is not running"
  fi
  rm -f "$1"
}
stop() {
  stop_one "$PID_FILE" eco
  stop_one "$SIM_PID_FILE" kube-sim
}

if [[ ${1:-} == "--stop" ]]; then stop; exit 0; fi

scripts/deps.sh
echo "== building (first build takes a few minutes)"
scripts/build.sh

mkdir -p "$RUN_DIR"
if [[ -f $SIM_PID_FILE ]] && kill -0 "$(cat "$SIM_PID_FILE")" 2>/dev/null; then
  echo "== kube-sim already running (pid $(cat "$SIM_PID_FILE"))"
else
  # A new simulated cluster is empty: eco starts afresh with it, so that
  # what eco records matches what the cluster holds.
  stop_one "$PID_FILE" eco >/dev/null
  rm -rf "$RUN_DIR/data"
  echo "== starting kube-sim with one simulated cluster, edge1, on port $SIM_PORT"
  nohup build/bin/kube-sim --port "$SIM_PORT" --clusters 1 --name-prefix edge \
    --kubeconfig-dir "$RUN_DIR/kubeconfigs" >"$RUN_DIR/kube-sim.log" 2>&1 &
  echo $! >"$SIM_PID_FILE"
  for _ in $(seq 1 100); do
    [[ -f $RUN_DIR/kubeconfigs/edge1.yaml ]] && break
    sleep 0.1
  done
  [[ -f $RUN_DIR/kubeconfigs/edge1.yaml ]] || { echo "kube-sim did not start; see $RUN_DIR/kube-sim.log"; exit 1; }
fi

if [[ -f $PID_FILE ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  echo "== eco already running (pid $(cat "$PID_FILE"))"
else
  echo "== starting eco serve on port $PORT (data in $RUN_DIR/data, log in $RUN_DIR/eco.log)"
  nohup build/bin/eco serve --port "$PORT" --data-dir "$RUN_DIR/data" >"$RUN_DIR/eco.log" 2>&1 &
  echo $! >"$PID_FILE"
fi

for _ in $(seq 1 100); do
  curl -fsS "$API/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$API/healthz" >/dev/null || { echo "eco did not start; see $RUN_DIR/eco.log"; exit 1; }

echo "== onboarding an example through the API with ecoctl (examples/ecoctl)"
ECOCTL="$PWD/build/bin/ecoctl --endpoint $API"
(
  cd examples/ecoctl
  ./make-archives.sh >/dev/null
  cp "$RUN_DIR/kubeconfigs/edge1.yaml" kubeconfig  # the simulated cluster's
  # cluster provider, cluster + kubeconfig, label, project, logical cloud, cluster reference
  $ECOCTL apply -f prerequisites.yaml
  # composite app, Helm chart upload, profile, deployment intent group, placement, intents
  $ECOCTL apply -f app.yaml -v values.yaml
  # instantiate the logical cloud, approve and instantiate the deployment intent group
  $ECOCTL apply -f instantiate.yaml -v values.yaml ||
    echo "(already instantiated by an earlier run: eco and kube-sim kept running)"
)

echo
echo "== what eco now holds"
curl -s "$API/v2/cluster-providers/prov1/clusters?withLabels=true"; echo
curl -s "$API/v2/projects/proj1/composite-apps/shop/v1/apps"; echo
curl -s "$API/v2/projects/proj1/composite-apps/shop/v1/deployment-intent-groups/shop-dig"; echo
DIG=$API/v2/projects/proj1/composite-apps/shop/v1/deployment-intent-groups/shop-dig
echo "== waiting until edge1 reports every resource Ready"
for _ in $(seq 1 120); do
  curl -s "$DIG/status?status=ready&output=summary" | grep -q '"readyStatus":"Ready"' && break
  sleep 0.5
done
curl -s "$DIG/status?status=ready"; echo

cat <<MSG

eco is running at $API (pid $(cat "$PID_FILE")), data in $RUN_DIR/data;
kube-sim serves edge1 on port $SIM_PORT (kubeconfig: $RUN_DIR/kubeconfigs/edge1.yaml).

Try:
  curl -s $API/v2/projects
  curl -s -X POST $API/v2/projects -d '{"metadata":{"name":"demo"}}'
  (cd examples/ecoctl && $ECOCTL get -f app.yaml -v values.yaml -o yaml)
  (cd examples/ecoctl && $ECOCTL delete -f app.yaml -v values.yaml)

API reference: docs/api.md    ecoctl: docs/ecoctl.md    limits: docs/limits.md
Stop both:     scripts/quickstart.sh --stop
MSG
