#!/usr/bin/env bash
# Installs every Debian package eco needs to build, test and run.
# Idempotent and quick when everything is present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libsqlite3-dev
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libyaml-dev libarchive-dev
  libcli11-dev libssl-dev libcrypt-dev zlib1g-dev libcurl4-openssl-dev libre2-dev libgmp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  etcd-server etcd-client
  wrk curl
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
