#!/usr/bin/env bash
# Overhead of metrics and tracing on the north API (docs/performance.md,
# "Metrics and tracing overhead"). A benchmark, not a test: it prints
# numbers and never fails on them.
#
# Configurations, each on a fresh `eco serve` (embedded store, one project):
#   base     this tree built with -DECO_TELEMETRY=OFF (no per-request metrics
#            and no spans; built in $BUILD-base unless BASE_ECO names a binary;
#            BASE_ECO=none leaves it out)
#   metrics  ECO without --otlp-endpoint (metrics are always on)
#   traced   ECO with --otlp-endpoint to eco_otlp_sink, sampling 100 %
# Rounds alternate the configurations (the order rotates every round), and
# the summary gives medians: on a small VM, separate runs of one binary
# differ by up to ~10 %.
#
# Each run: 2 s of warm-up, then DURATION seconds measured with wrk
# (CONNECTIONS connections, eco with HTTP_THREADS threads). Saturated (wrk
# as fast as it can; SATURATED=0 skips it) and, with RATE set, at a fixed
# rate (Poisson arrivals, bench/api/common.lua) where eco's CPU per request
# is the figure to compare. eco runs on CPU 0, wrk and the sink on CPU 1
# when there are two. With CALLGRIND=1 it also counts eco's instructions
# per request under valgrind (2,000 sequential GETs): exact, but blind to
# the kernel and the caches, and valgrind counts every byte of a large
# `rep movsb` copy as an instruction.
#
# IDLE_POLL=1 (the default, as root) holds /dev/cpu_dma_latency at 0 during
# the runs, so idle CPUs poll instead of halting. In a virtual machine a
# halted vCPU is woken through the hypervisor, and eco wakes the load
# generator's vCPU for every response: with halts, any extra work per
# request also makes the other vCPU idle, and halt, more often, and the
# saturated rate falls by several times that work (docs/performance.md).
# Latency benchmarks commonly do the same (tuned's latency-performance
# profile); IDLE_POLL=0 measures the machine as it is.
#
#   bench/api/overhead.sh                         # ROUNDS=10 DURATION=6 RATE=8000
#   RATE=20000 SATURATED=0 bench/api/overhead.sh  # CPU per request at 20,000 GET/s
#   KIND=post RATE=2000 bench/api/overhead.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
ECO=${ECO:-$BUILD/bin/eco}
SINK=${SINK:-$BUILD/bin/eco_otlp_sink}
BASE_ECO=${BASE_ECO:-}
ROUNDS=${ROUNDS:-10}
DURATION=${DURATION:-6}
RATE=${RATE-8000}
KIND=${KIND:-get}
CALLGRIND=${CALLGRIND:-0}
CONNECTIONS=${CONNECTIONS:-16}
HTTP_THREADS=${HTTP_THREADS:-32}  # eco serves one connection per thread at a time
PORT=${PORT:-9391}
SINK_PORT=${SINK_PORT:-4391}

if [[ -z "${SKIP_BUILD:-}" ]]; then
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$BUILD" --target eco eco_otlp_sink >/dev/null
  if [[ -z "$BASE_ECO" ]]; then
    if [[ ! -f "$BUILD-base/build.ninja" ]]; then
      cmake -S "$ROOT" -B "$BUILD-base" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECO_TELEMETRY=OFF >/dev/null
    fi
    cmake --build "$BUILD-base" --target eco >/dev/null
  fi
fi
[[ -z "$BASE_ECO" ]] && BASE_ECO=$BUILD-base/bin/eco
[[ "$BASE_ECO" == none ]] && BASE_ECO=""
if [[ -n "$BASE_ECO" && ! -x "$BASE_ECO" ]]; then
  echo "overhead.sh: no base binary at $BASE_ECO (run without SKIP_BUILD, or BASE_ECO=none)" >&2
  exit 1
fi
command -v wrk >/dev/null || { echo "overhead.sh: wrk is missing (apt-get install -y wrk)" >&2; exit 1; }

IDLE_POLL=${IDLE_POLL:-1}
WORK=$(mktemp -d /tmp/eco-overhead.XXXXXX)
LATENCY_PID=""
if [[ $IDLE_POLL == 1 && -w /dev/cpu_dma_latency ]]; then
  # The request lasts while the file is open.
  python3 -c 'import os, struct, time
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", 0))
time.sleep(1e9)' &
  LATENCY_PID=$!
else
  IDLE_POLL=0
fi
ECO_CPU="" LOAD_CPU=""
if [[ $(nproc) -ge 2 ]]; then ECO_CPU="taskset -c 0"; LOAD_CPU="taskset -c 1"; fi
NICE=""
[[ $(id -u) -eq 0 ]] && NICE="nice -n -20"
TCK=$(getconf CLK_TCK)

$LOAD_CPU "$SINK" --port "$SINK_PORT" >"$WORK/sink.log" 2>&1 &
SINK_PID=$!
ECO_PID=""
cleanup() {
  [[ -n "$ECO_PID" ]] && kill "$ECO_PID" 2>/dev/null && wait "$ECO_PID" 2>/dev/null
  kill "$SINK_PID" 2>/dev/null && wait "$SINK_PID" 2>/dev/null
  [[ -n "$LATENCY_PID" ]] && kill "$LATENCY_PID" 2>/dev/null
  cat "$WORK/sink.log" >&2 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

modes=(metrics traced)
[[ -n "$BASE_ECO" ]] && modes=(base metrics traced)

# start MODE: a fresh eco for MODE, with project p1; sets ECO_PID.
start() {
  local mode=$1 bin=$ECO args=()
  [[ $mode == base ]] && bin=$BASE_ECO
  [[ $mode == traced ]] && args=(--otlp-endpoint "http://127.0.0.1:$SINK_PORT")
  rm -rf "$WORK/data"
  if curl -sf "localhost:$PORT/healthz" >/dev/null; then
    echo "overhead.sh: port $PORT is in use (set PORT)" >&2
    exit 1
  fi
  $NICE $ECO_CPU "$bin" serve --port "$PORT" --data-dir "$WORK/data" --http-threads "$HTTP_THREADS" "${args[@]}" \
    >"$WORK/eco-$mode.log" 2>&1 &
  ECO_PID=$!
  for _ in $(seq 100); do curl -sf "localhost:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf -XPOST "localhost:$PORT/v2/projects" -d '{"metadata":{"name":"p1"}}' >/dev/null
}

stop() {
  kill "$ECO_PID" 2>/dev/null || true
  wait "$ECO_PID" 2>/dev/null || true
  ECO_PID=""
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run MODE RATE: one measured run; prints "MODE req/s cpu-us/request".
run() {
  local mode=$1 rate=$2 url script expected
  if [[ $KIND == post ]]; then
    url="http://127.0.0.1:$PORT/v2/projects" script=post.lua expected=201
  else
    url="http://127.0.0.1:$PORT/v2/projects/p1" script=get.lua expected=200
  fi
  start "$mode"
  ECO_BENCH_RATE=$rate ECO_BENCH_THREADS=2 $LOAD_CPU wrk -t2 -c"$CONNECTIONS" -d2s \
    -s "$ROOT/bench/api/$script" "$url" -- "$expected" warm >/dev/null
  local c0 c1 out n rps dropped=""
  c0=$(cpu_ticks "$ECO_PID")
  out=$(ECO_BENCH_RATE=$rate ECO_BENCH_THREADS=2 $LOAD_CPU wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" \
    -s "$ROOT/bench/api/$script" "$url" -- "$expected")
  c1=$(cpu_ticks "$ECO_PID")
  n=$(awk '/requests in/{print $1}' <<<"$out")
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  if [[ $mode == traced ]]; then
    sleep 1.5  # the exporter's flush interval
    dropped=$(curl -s "localhost:$PORT/metrics" | awk '/^eco_trace_spans_dropped_total/{print $2}')
  fi
  stop
  local bad
  bad=$(awk '/^RESULT/{for(i=1;i<=NF;i++) if ($i ~ /^bad=/) {sub("bad=","",$i); print $i}}' <<<"$out")
  echo "$mode $rps $(echo "($c1 - $c0) * 1000000 / $TCK / $n" | bc -l | xargs printf '%.1f') ${bad:-?} ${dropped:-0}"
}

summary() {  # stdin: "MODE req/s cpu bad dropped" lines
  python3 -c '
import statistics as st, sys
rows = {}
for line in sys.stdin:
    m, rps, cpu, bad, dropped = line.split()
    rows.setdefault(m, []).append((float(rps), float(cpu), bad, dropped))
ref = sys.argv[1]
base_rps = st.median(r[0] for r in rows[ref]); base_cpu = st.median(r[1] for r in rows[ref])
print("| configuration | runs | req/s (median) | range | eco CPU per request (median) | bad responses | spans dropped |")
print("|---|---:|---:|---|---:|---:|---:|")
for m in sys.argv[2:]:
    if m not in rows: continue
    v = rows[m]; rps = st.median(r[0] for r in v); cpu = st.median(r[1] for r in v)
    d_rps = "" if m == ref else " (%+.1f %%)" % (100 * (rps / base_rps - 1))
    d_cpu = "" if m == ref else " (%+.1f %%)" % (100 * (cpu / base_cpu - 1))
    print("| %s | %d | %.0f%s | %.0f-%.0f | %.1f us%s | %s | %s |" % (m, len(v), rps, d_rps,
          min(r[0] for r in v), max(r[0] for r in v), cpu, d_cpu,
          ",".join(sorted(set(r[2] for r in v))), ",".join(sorted(set(r[3] for r in v)))))
' "$1" "${modes[@]}"
}

echo "# eco API overhead: $KIND, $ROUNDS rounds of ${DURATION}s, $(nproc) CPUs, $CONNECTIONS connections, idle poll $IDLE_POLL, $(date -u +%FT%TZ)"
rates=("" ${RATE:+$RATE})
[[ ${SATURATED:-1} == 0 && -n "$RATE" ]] && rates=("$RATE")
for rate in "${rates[@]}"; do
  label="saturated"
  [[ -n "$rate" ]] && label="fixed rate $rate req/s"
  echo
  echo "## $label"
  : >"$WORK/rows"
  for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((${#modes[@]} - 1))); do
      mode=${modes[$(((k + r) % ${#modes[@]}))]}
      line=$(run "$mode" "$rate")
      echo "round $r: $line" >&2
      echo "$line" >>"$WORK/rows"
    done
  done
  summary "${modes[0]}" <"$WORK/rows"
done

if [[ $CALLGRIND == 1 ]]; then
  command -v valgrind >/dev/null || { echo "CALLGRIND=1 needs valgrind" >&2; exit 1; }
  echo
  echo "## instructions per request (callgrind, 2,000 sequential GETs after 300)"
  echo
  echo "| configuration | instructions per request |"
  echo "|---|---:|"
  seq 300 | sed "s|.*|url = \"http://127.0.0.1:$PORT/v2/projects/p1\"|" >"$WORK/warm.txt"
  seq 2000 | sed "s|.*|url = \"http://127.0.0.1:$PORT/v2/projects/p1\"|" >"$WORK/urls.txt"
  for mode in "${modes[@]}"; do
    bin=$ECO args=()
    [[ $mode == base ]] && bin=$BASE_ECO
    [[ $mode == traced ]] && args=(--otlp-endpoint "http://127.0.0.1:$SINK_PORT")
    rm -rf "$WORK/data" "$WORK"/cg.*
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.%p" "$bin" serve --port "$PORT" \
      --data-dir "$WORK/data" --http-threads 4 "${args[@]}" >"$WORK/eco-cg.log" 2>&1 &
    ECO_PID=$!
    for _ in $(seq 300); do curl -sf "localhost:$PORT/healthz" >/dev/null && break; sleep 0.2; done
    curl -sf -XPOST "localhost:$PORT/v2/projects" -d '{"metadata":{"name":"p1"}}' >/dev/null
    curl -s -K "$WORK/warm.txt" >/dev/null
    sleep 2
    callgrind_control -z "$ECO_PID" >/dev/null 2>&1
    curl -s -K "$WORK/urls.txt" >/dev/null
    sleep 2.5
    callgrind_control -d "$ECO_PID" >/dev/null 2>&1
    sleep 1
    total=$(callgrind_annotate "$(ls -t "$WORK"/cg.*.1 | head -1)" 2>/dev/null |
      awk '/PROGRAM TOTALS/{gsub(",", "", $1); print $1}')
    stop
    echo "| $mode | $((total / 2000)) |"
  done
fi
