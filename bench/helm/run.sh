#!/usr/bin/env bash
# bench/helm/run.sh — template engine throughput and memory, eco vs the Go
# reference renderer (gotmpl-ref: Go 1.19 text/template + Sprig 3.2.3), on
# the same template cases in the same run. See docs/performance.md.
#
# Both sides do the same work: case data decoded once, then every case parsed
# and executed ITER times. Runs are paired (eco, then reference, RUNS times)
# and the median of the per-pair ratios is reported, together with each
# side's peak RSS. Two corpora: all deterministic cases, and the same minus
# the cases that generate keys or run deliberately slow KDFs (genCA,
# genPrivateKey, derivePassword, htpasswd, ...), whose cost is the crypto
# library's, not the template engine's.
#
# Then renders the two largest charts of the corpus in process, repeatedly.
#
# Knobs: RUNS=5 ITER=20 BUILD=<repo>/build SKIP_BUILD=1 SHARED=<repo>/../shared
# Not a pass/fail test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
RUNS=${RUNS:-5}
ITER=${ITER:-20}
BUILD=${BUILD:-$repo/build}
SHARED=${SHARED:-$repo/../shared}
OUT=${OUT:-$BUILD/bench-results/helm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

if [[ -z ${SKIP_BUILD:-} ]]; then
  BUILD_DIR=$BUILD "$repo/scripts/build.sh" >/dev/null
fi
REF=$BUILD/bench/gotmpl-ref
if [[ ! -x $REF ]]; then
  mkdir -p "$(dirname "$REF")"
  sh "$SHARED/tools/gotmpl-ref/build.sh" "$REF" >"$OUT/gotmpl-ref-build.log" 2>&1
fi

all=$SHARED/conformance/template/cases.json
nocrypto=$OUT/cases-no-keygen.json
python3 - "$all" "$nocrypto" <<'PY'
import json, re, sys
slow = re.compile(r"gen(CA|PrivateKey|SelfSignedCert|SignedCert)|buildCustomCert|derivePassword|htpasswd")
cases = json.load(open(sys.argv[1]))
def text(c):
    d = c.get("defines") or ""
    return c["template"] + ("".join(d) if isinstance(d, list) else d)
json.dump([c for c in cases if not slow.search(text(c))], open(sys.argv[2], "w"))
PY

# Prints "renders_per_s peak_rss_kib" for one run of one engine.
measure() {
  local engine=$1 corpus=$2 log
  log=$(mktemp)
  if [[ $engine == eco ]]; then
    /usr/bin/time -f 'maxrss %M' "$BUILD/bin/eco_helm_bench" "$corpus" "$ITER" 2>"$log" >/dev/null
  else
    /usr/bin/time -f 'maxrss %M' "$REF" -in "$corpus" -bench "$ITER" -out /dev/null 2>"$log" >/dev/null
  fi
  local rate rss
  rate=$(grep -oE '\(([0-9.]+) renders/s' "$log" | grep -oE '[0-9.]+' | head -1)
  rss=$(grep -oE 'maxrss [0-9]+' "$log" | grep -oE '[0-9]+')
  cat "$log" >>"$OUT/runs.log"
  rm -f "$log"
  echo "$rate $rss"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

{
  echo "# bench/helm — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, RUNS=$RUNS ITER=$ITER"
  echo
  echo "| corpus | cases | eco renders/s (median) | reference renders/s (median) | ratio eco/ref (median of pairs) | eco peak RSS KiB | ref peak RSS KiB |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$OUT/results.md"

for corpus in "$all" "$nocrypto"; do
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$corpus")
  : >"$OUT/pairs.txt"
  for ((r = 1; r <= RUNS; r++)); do
    read -r e_rate e_rss < <(measure eco "$corpus")
    read -r g_rate g_rss < <(measure ref "$corpus")
    echo "$e_rate $g_rate $e_rss $g_rss" >>"$OUT/pairs.txt"
    echo "  $(basename "$corpus") run $r: eco $e_rate/s ${e_rss}KiB, ref $g_rate/s ${g_rss}KiB" >&2
  done
  e_med=$(awk '{print $1}' "$OUT/pairs.txt" | median)
  g_med=$(awk '{print $2}' "$OUT/pairs.txt" | median)
  ratio=$(awk '{printf "%.2f\n", $1/$2}' "$OUT/pairs.txt" | median)
  e_rss=$(awk '{print $3}' "$OUT/pairs.txt" | median)
  g_rss=$(awk '{print $4}' "$OUT/pairs.txt" | median)
  echo "| $(basename "$corpus") | $n | $e_med | $g_med | $ratio | $e_rss | $g_rss |" >>"$OUT/results.md"
done

# Whole large charts, in process: loaded once, then rendered as
# `helm template` renders them (values, dependencies, schema, templates,
# sorting, output text). The first render parses everything; later renders
# reuse the parsed templates.
{
  echo
  echo "| chart | renders | first render ms | median ms | min ms | peak RSS KiB |"
  echo "| --- | --- | --- | --- | --- | --- |"
} >>"$OUT/results.md"
for chart in emco/kube-prometheus-stack/kube-prometheus-stack emco/prometheus-operator/prometheus-operator; do
  dir=$SHARED/conformance/helm/charts/$chart
  [[ -d $dir ]] || continue
  n=$((ITER * 5))
  line=$("$BUILD/bin/eco_helm_bench" --chart "$dir" "$n" 2>&1 | tail -1)
  echo "$line" >>"$OUT/runs.log"
  first=$(echo "$line" | grep -oE 'first [0-9.]+' | grep -oE '[0-9.]+')
  med=$(echo "$line" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
  min=$(echo "$line" | grep -oE 'min [0-9.]+' | grep -oE '[0-9.]+')
  rss=$(echo "$line" | grep -oE 'peak RSS [0-9]+' | grep -oE '[0-9]+')
  echo "| $(basename "$chart") | $n | $first | $med | $min | $rss |" >>"$OUT/results.md"
done
cat "$OUT/results.md"
