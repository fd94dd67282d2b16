#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each for a
# short time (FUZZ_SECONDS, default 30; FUZZ_SEED, default 1) from a seed
# corpus made of the conformance templates and chart archives, and of the
# kubeconfig and secret seeds in fuzz/seeds/. A crash, sanitizer report, hang
# (> 10 s per input) or > 2 GiB RSS fails the run; the reproducer is left in
# build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-30}
# A fixed seed makes the short CI run repeatable; FUZZ_SEED=0 picks a random
# one for longer exploratory runs.
SEED=${FUZZ_SEED:-1}
BUILD_DIR=build-fuzz
SHARED=${ECO_SHARED_DIR:-$PWD/../shared}

CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DECO_FUZZ=ON >/dev/null
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}" fuzz_template fuzz_chart fuzz_kubeconfig fuzz_secrets

seeds=$BUILD_DIR/seeds
rm -rf "$seeds" && mkdir -p "$seeds/template" "$seeds/chart" "$seeds/kubeconfig" "$seeds/secrets" \
  "$BUILD_DIR/artifacts"
# Template seeds: every conformance template, with its defines before the
# separator the fuzz target splits on.
if [[ -f $SHARED/conformance/template/cases.json ]] && command -v python3 >/dev/null; then
  python3 - "$SHARED/conformance/template/cases.json" "$seeds/template" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
for i, c in enumerate(cases):
    d = c.get("defines") or ""
    if isinstance(d, list):
        d = "".join(d)
    text = (d + "\n---8<---\n" if d else "") + c["template"]
    open(f"{sys.argv[2]}/{i:04d}", "w").write(text)
PY
fi
printf '{{ .Values.name | quote }}' >"$seeds/template/basic"
# Inputs that once failed stay in the seeds.
cp fuzz/regressions/template/* "$seeds/template/" 2>/dev/null || true
# Chart seeds: every packaged subchart in the corpus and a few chart
# directories packed here.
if [[ -d $SHARED/conformance/helm/charts ]]; then
  find "$SHARED/conformance/helm/charts" -name '*.tgz' -size -512k | head -50 |
    while read -r f; do cp "$f" "$seeds/chart/$(echo "$f" | md5sum | cut -c1-12).tgz"; done
  for d in "$SHARED"/conformance/helm/charts/helm-v3/*/; do
    [[ -f $d/Chart.yaml ]] || continue
    tar -C "$(dirname "$d")" -czf "$seeds/chart/$(basename "$d").tgz" "$(basename "$d")" 2>/dev/null || true
  done
fi

# Kubeconfig and secret seeds: kept in the repository.
cp fuzz/seeds/kubeconfig/* "$seeds/kubeconfig/" 2>/dev/null || true
cp fuzz/seeds/secrets/* "$seeds/secrets/" 2>/dev/null || true

rc=0
for target in template chart kubeconfig secrets; do
  echo "== fuzz_$target for ${SECONDS_EACH}s"
  mkdir -p "$BUILD_DIR/corpus/$target"
  if ! "$BUILD_DIR/bin/fuzz_$target" "$BUILD_DIR/corpus/$target" "$seeds/$target" \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -seed="$SEED" \
      -artifact_prefix="$BUILD_DIR/artifacts/$target-" -print_final_stats=1 \
      >"$BUILD_DIR/fuzz_$target.log" 2>&1; then
    echo "fuzz_$target FAILED; see $BUILD_DIR/fuzz_$target.log:"
    grep -E "ERROR|SUMMARY|==[0-9]+==|Test unit written" "$BUILD_DIR/fuzz_$target.log" | head -20
    rc=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$BUILD_DIR/fuzz_$target.log" | tr '\n' ' '
    echo
  fi
done
exit $rc
