#!/bin/sh
# Packs the chart and the profile app.yaml uploads.
set -eu
cd "$(dirname "$0")"
tar czf infer.tgz -C charts infer
tar czf infer-profile.tgz -C profile .
echo "made infer.tgz and infer-profile.tgz in $(pwd)"
