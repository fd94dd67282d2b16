#!/bin/sh
# Packs the chart and the profile the example YAML files upload. The chart's
# top directory must be named like the app (web/); the profile's
# manifest.yaml must sit at the archive root.
set -eu
cd "$(dirname "$0")"
tar czf web.tgz -C charts web
tar czf web-profile.tgz -C profiles/web .
[ -f kubeconfig ] || cp kubeconfig.example kubeconfig
echo "made web.tgz, web-profile.tgz and kubeconfig in $(pwd)"
