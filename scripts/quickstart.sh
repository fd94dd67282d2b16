#!/usr/bin/env bash
# First command for a new user: installs dependencies, builds eco, starts
# kube-sim (a fleet of six simulated Kubernetes clusters: core1, core2 of
# provider "central" and edge1..edge4 of provider "edges") and `eco serve` on
# its embedded store, onboards the two-tier example (examples/two-tier: a
# web frontend placed on every edge by label, its database on core1 by name)
# through the API with ecoctl, instantiates it, shows progress until every
# cluster reports it Ready, prints the status table and how to go on. Both
# keep running; `--stop` ends them. No network access is needed.
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
echo "== building eco, ecoctl and kube-sim (the first build takes about 5 minutes on 2 cores)"
TARGETS="eco ecoctl kube-sim" scripts/build.sh

mkdir -p "$RUN_DIR"
if [[ -f $SIM_PID_FILE ]] && kill -0 "$(cat "$SIM_PID_FILE")" 2>/dev/null; then
  echo "== kube-sim already running (pid $(cat "$SIM_PID_FILE"))"
else
  # A new simulated cluster is empty: eco starts afresh with it, so that
  # what eco records matches what the cluster holds.
  stop_one "$PID_FILE" eco >/dev/null
  rm -rf "$RUN_DIR/data"
  echo "== starting kube-sim with six simulated clusters (examples/two-tier/fleet.yaml) on port $SIM_PORT"
  rm -rf "$RUN_DIR/kubeconfigs"
  nohup build/bin/kube-sim --port "$SIM_PORT" --fleet examples/two-tier/fleet.yaml \
    --kubeconfig-dir "$RUN_DIR/kubeconfigs" >"$RUN_DIR/kube-sim.log" 2>&1 &
  echo $! >"$SIM_PID_FILE"
  for _ in $(seq 1 100); do
    grep -q "kube-sim: serving" "$RUN_DIR/kube-sim.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "kube-sim: serving" "$RUN_DIR/kube-sim.log" || { echo "kube-sim did not start; see $RUN_DIR/kube-sim.log"; exit 1; }
fi

if [[ -f $PID_FILE ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  echo "== eco already running (pid $(cat "$PID_FILE"))"
else
  echo "== starting eco serve on port $PORT (data in $RUN_DIR/data, log in $RUN_DIR/eco.log)"
  nohup build/bin/eco serve --port "$PORT" --data-dir "$RUN_DIR/data" >"$RUN_DIR/eco.log" 2>&1 &
  echo $! >"$PID_FILE"
fi

# Ready when this eco says it serves (another program answering on the
# port must not be mistaken for it), or gone.
for _ in $(seq 1 200); do
  grep -q "eco serving the API" "$RUN_DIR/eco.log" 2>/dev/null && break
  kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  echo "eco did not start (is port $PORT taken? ECO_PORT chooses another):"
  tail -n 3 "$RUN_DIR/eco.log"
  rm -f "$PID_FILE"
  exit 1
fi
curl -fsS "$API/healthz" >/dev/null || { echo "eco does not answer on $API; see $RUN_DIR/eco.log"; exit 1; }

echo "== onboarding the two-tier example through the API with ecoctl (examples/two-tier)"
ECOCTL="$PWD/build/bin/ecoctl --endpoint $API"
DIG=demo/twotier/v1/twotier-dig
(
  cd examples/two-tier
  ./make-archives.sh >/dev/null
  rm -rf kubeconfigs && cp -r "$RUN_DIR/kubeconfigs" kubeconfigs  # the simulated clusters'
  # 2 cluster providers, 6 clusters with kubeconfigs and labels, a project,
  # a logical cloud over every cluster
  $ECOCTL apply -f prerequisites.yaml -v values.yaml
  # composite app with two Helm charts (web, db), their profiles, the DIG,
  # placement by label (web on the edges) and by name (db on core1)
  $ECOCTL apply -f app.yaml -v values.yaml
  # instantiate the logical cloud, approve and instantiate the DIG
  $ECOCTL apply -f instantiate.yaml -v values.yaml ||
    echo "(already instantiated by an earlier run: eco and kube-sim kept running)"
)

echo
echo "== waiting until every cluster reports its part Ready"
$ECOCTL status "$DIG" --wait 120

# EMCO's own example, Google's online boutique (twelve charts), on core2 --
# when the conformance corpus with EMCO's charts is beside the repository.
if [[ -d ${ECO_SHARED_DIR:-$PWD/../shared}/conformance/helm/charts/emco/gms ]]; then
  echo
  echo "== onboarding EMCO's online boutique (examples/emco-gms, twelve charts) onto core2"
  (
    cd examples/emco-gms
    ./make-archives.sh >/dev/null
    $ECOCTL apply -f app.yaml -v values.yaml
    $ECOCTL apply -f instantiate.yaml -v values.yaml || echo "(already instantiated by an earlier run)"
  )
  $ECOCTL status demo/gms/v1/gms-dig --wait 120
fi

cat <<MSG

Dashboard:     $API/ui/   (live status of every deployment; open it in a browser)

eco is running at $API (pid $(cat "$PID_FILE")), data in $RUN_DIR/data;
kube-sim serves core1, core2, edge1..edge4 on port $SIM_PORT (kubeconfigs in $RUN_DIR/kubeconfigs).

Try:
  curl -s -X POST http://127.0.0.1:$SIM_PORT/sim/clusters/edge1/down   # then watch edge1 turn red; .../up to heal
  $ECOCTL status $DIG
  curl -s '$API/v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/twotier-dig/status?status=ready'
  curl -s $API/v2/openapi.json | head
  (cd examples/two-tier && $ECOCTL get -f app.yaml -v values.yaml -o yaml)
  (cd examples/two-tier && $ECOCTL delete -f app.yaml -v values.yaml)

Example: examples/two-tier/README.md   Dashboard: docs/dashboard.md   API: docs/api.md   ecoctl: docs/ecoctl.md   limits: docs/limits.md
Stop both:     scripts/quickstart.sh --stop
MSG
