#!/usr/bin/env bash
# Gathers the fuzz targets' inputs into OUT/<target>/: the conformance
# templates (with their defines before the separator the template target
# splits on) and chart archives from ECO_SHARED_DIR (default ../shared), the
# hand-written seeds in fuzz/seeds/<target>/, and the inputs that once
# failed, fuzz/regressions/<target>/. Used by scripts/fuzz.sh (libFuzzer's
# starting corpus) and by the sanitizer tree's FuzzReplay tests.
# Usage: scripts/fuzz_seeds.sh OUT TARGET...
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT=$1; shift
SHARED=${ECO_SHARED_DIR:-$ROOT/../shared}

rm -rf "$OUT" && mkdir -p "$OUT"
for target in "$@"; do mkdir -p "$OUT/$target"; done

if [[ -d $OUT/template ]]; then
  if [[ -f $SHARED/conformance/template/cases.json ]]; then
    python3 - "$SHARED/conformance/template/cases.json" "$OUT/template" <<'PY'
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
  printf '{{ .Values.name | quote }}' >"$OUT/template/basic"
fi
# Every packaged subchart in the corpus (first 50 under 512 KiB) and the
# chart folders packed here.
if [[ -d $OUT/chart && -d $SHARED/conformance/helm/charts ]]; then
  find "$SHARED/conformance/helm/charts" -name '*.tgz' -size -512k | sort | awk 'NR <= 50' |
    while read -r f; do cp "$f" "$OUT/chart/$(echo "$f" | md5sum | cut -c1-12).tgz"; done
  for d in "$SHARED"/conformance/helm/charts/helm-v3/*/; do
    [[ -f $d/Chart.yaml ]] || continue
    tar -C "$(dirname "$d")" -czf "$OUT/chart/$(basename "$d").tgz" "$(basename "$d")" 2>/dev/null || true
  done
fi

for target in "$@"; do
  cp "$ROOT"/fuzz/seeds/"$target"/* "$OUT/$target/" 2>/dev/null || true
  cp "$ROOT"/fuzz/regressions/"$target"/* "$OUT/$target/" 2>/dev/null || true
  echo "$target: $(find "$OUT/$target" -type f | wc -l) inputs"
done
