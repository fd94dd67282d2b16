#!/usr/bin/env bash
# First command for a new user: installs dependencies, builds eco, starts
# `eco serve` on its embedded store, creates a project through the API and
# shows how to go on. The server keeps running; `--stop` ends it.
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

echo "== creating project 'demo'"
code=$(curl -s -o /tmp/eco-qs.json -w '%{http_code}' -X POST "$API/v2/projects" \
  -H 'Content-Type: application/json' \
  -d '{"metadata":{"name":"demo","description":"created by quickstart"}}')
case $code in
  201) echo "created: $(cat /tmp/eco-qs.json)" ;;
  409) echo "project 'demo' already exists" ;;
  *) echo "unexpected answer $code: $(cat /tmp/eco-qs.json)"; exit 1 ;;
esac

cat <<MSG

eco is running at $API (pid $(cat "$PID_FILE")).

Try:
  curl -s $API/v2/projects
  curl -s -X POST $API/v2/cluster-providers -d '{"metadata":{"name":"prov"}}'
  build/bin/ecoctl --endpoint $API apply -f examples/ecoctl/setup.yaml
  build/bin/ecoctl --endpoint $API get -f examples/ecoctl/setup.yaml

API reference: docs/api.md    ecoctl: docs/ecoctl.md
Stop eco:      scripts/quickstart.sh --stop
MSG
