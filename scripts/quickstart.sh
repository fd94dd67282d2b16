#!/usr/bin/env bash
# First command for a new user: installs dependencies, builds eco, starts
# `eco serve` on its embedded store, onboards an example composite app
# through the API with ecoctl, instantiates it (placement, rendering,
# controllers: the plan rsync will apply) and shows how to go on. The server keeps
# running; `--stop` ends it.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${ECO_PORT:-9015}
RUN_DIR=${ECO_RUN_DIR:-$PWD/.quickstart}
PID_FILE=$RUN_DIR/eco.pid
API=http://127.0.0.1:$PORT

stop() {
  if [[ -f $PID_FILE ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
    kill "$(cat "$PID_FILE")" && echo "eco stopped"
  else
    echo "eco is not running"
  fi
  rm -f "$PID_FILE"
}

if [[ ${1:-} == "--stop" ]]; then stop; exit 0; fi

scripts/deps.sh
echo "== building (first build takes a few minutes)"
scripts/build.sh

mkdir -p "$RUN_DIR"
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
  # cluster provider, cluster + kubeconfig, label, project, logical cloud, cluster reference
  $ECOCTL apply -f prerequisites.yaml
  # composite app, Helm chart upload, profile, deployment intent group, placement, intents
  $ECOCTL apply -f app.yaml -v values.yaml
  # instantiate the logical cloud, approve and instantiate the deployment intent group
  $ECOCTL apply -f instantiate.yaml -v values.yaml
)

echo
echo "== what eco now holds"
curl -s "$API/v2/cluster-providers/prov1/clusters?withLabels=true"; echo
curl -s "$API/v2/projects/proj1/composite-apps/shop/v1/apps"; echo
curl -s "$API/v2/projects/proj1/composite-apps/shop/v1/deployment-intent-groups/shop-dig"; echo
echo "== the deployment intent group's lifecycle (rsync, which applies it to clusters, comes next)"
curl -s "$API/v2/projects/proj1/composite-apps/shop/v1/deployment-intent-groups/shop-dig/status"; echo

cat <<MSG

eco is running at $API (pid $(cat "$PID_FILE")), data in $RUN_DIR/data.

Try:
  curl -s $API/v2/projects
  curl -s -X POST $API/v2/projects -d '{"metadata":{"name":"demo"}}'
  (cd examples/ecoctl && $ECOCTL get -f app.yaml -v values.yaml -o yaml)
  (cd examples/ecoctl && $ECOCTL delete -f app.yaml -v values.yaml)

API reference: docs/api.md    ecoctl: docs/ecoctl.md    limits: docs/limits.md
Stop eco:      scripts/quickstart.sh --stop
MSG
