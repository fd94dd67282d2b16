#!/bin/sh
# Packs the two charts and their profiles that app.yaml uploads. A chart's
# top directory is named like its app; a profile's manifest.yaml sits at
# the archive root.
set -eu
cd "$(dirname "$0")"
for app in web db; do
  tar czf "$app.tgz" -C charts "$app"
  tar czf "$app-profile.tgz" -C "profiles/$app" .
done
echo "made web.tgz, db.tgz, web-profile.tgz and db-profile.tgz in $(pwd)"
