#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each for a
# short time (FUZZ_SECONDS, default 30; FUZZ_SEED, default 1) from a seed
# corpus made of the conformance templates and chart archives, and of the
# hand-written seeds in fuzz/seeds/<target>/ (kubeconfig, secrets, api_json,
# multipart, values). A crash, sanitizer report, hang (> 10 s per input) or
# > 2 GiB RSS fails the run; the reproducer is left in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-30}
# A fixed seed makes the short CI run repeatable; FUZZ_SEED=0 picks a random
# one for longer exploratory runs.
SEED=${FUZZ_SEED:-1}
BUILD_DIR=build-fuzz
SHARED=${ECO_SHARED_DIR:-$PWD/../shared}

# -O1, as libFuzzer's documentation suggests: about as fast to fuzz, and the
# tree compiles faster than at -O2 (CI builds it from scratch).
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DECO_FUZZ=ON >/dev/null
TARGETS=(template chart kubeconfig secrets api_json multipart values agent)
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}" "${TARGETS[@]/#/fuzz_}"

seeds=$BUILD_DIR/seeds
rm -rf "$seeds" && mkdir -p "${TARGETS[@]/#/$seeds/}" "$BUILD_DIR/artifacts"
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

# Hand-written seeds kept in the repository, and inputs that once failed
# (fuzz/regressions/<target>/), which every run replays first.
for target in "${TARGETS[@]}"; do
  cp fuzz/seeds/"$target"/* "$seeds/$target/" 2>/dev/null || true
  cp fuzz/regressions/"$target"/* "$seeds/$target/" 2>/dev/null || true
done

rc=0
for target in "${TARGETS[@]}"; do
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
