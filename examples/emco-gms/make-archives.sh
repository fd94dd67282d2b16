#!/bin/sh
# Packs EMCO's "gms" example charts (Google's online boutique, twelve
# charts) from the conformance corpus -- $ECO_SHARED_DIR, default
# ../../../shared -- with an empty profile for each.
set -eu
cd "$(dirname "$0")"
shared=${ECO_SHARED_DIR:-$(cd ../../.. && pwd)/shared}
charts=$shared/conformance/helm/charts/emco/gms
[ -d "$charts" ] || { echo "no EMCO example charts at $charts (set ECO_SHARED_DIR)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
printf 'version: v1\ntype:\n  values: "override_values.yaml"\n' >"$profile/manifest.yaml"
printf '{}\n' >"$profile/override_values.yaml"
n=0
for dir in "$charts"/*/; do
  app=$(basename "$dir")
  tar czf "$app.tgz" -C "$charts" "$app"
  tar czf "$app-profile.tgz" -C "$profile" .
  n=$((n + 1))
done
echo "made $n charts and profiles in $(pwd)"
