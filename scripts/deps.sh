#!/usr/bin/env bash
# Installs every Debian package eco needs to build, test and run, and every
# tool the scripts and benchmarks call (python3 for the fuzz seeds and
# bench/api, bc and time for the benchmarks).
# Idempotent and quick when everything is present. With --test, also what
# only the tests need: Debian's Chromium, Node.js, and playwright-core from
# the npm registry (tests/ui/package-lock.json) for the dashboard test. With
# --fuzz, clang 14 and its libFuzzer runtime (scripts/fuzz.sh).
set -euo pipefail
WITH_TESTS=0 WITH_FUZZ=0
for arg in "$@"; do
  case $arg in
    --test) WITH_TESTS=1 ;;
    --fuzz) WITH_FUZZ=1 ;;  # clang and its libFuzzer, for scripts/fuzz.sh
    *) echo "usage: $0 [--test] [--fuzz]" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libsqlite3-dev
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libyaml-dev libarchive-dev
  libcli11-dev libssl-dev libcrypt-dev zlib1g-dev libcurl4-openssl-dev libnghttp2-dev libre2-dev libgmp-dev
  libsimdjson-dev prometheus-cpp-dev
  prometheus
  libgtest-dev libgmock-dev libbenchmark-dev
  etcd-server etcd-client
  wrk curl strace
  python3 bc time
  libboost-dev libgoogle-perftools-dev
)

if ((WITH_FUZZ)); then
  PACKAGES+=(clang-14 libclang-rt-14-dev)
fi
if ((WITH_TESTS)); then
  PACKAGES+=(chromium)
  # The machine's Node.js when there is one (playwright-core wants >= 20).
  command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#PACKAGES[@]} packages present"
else
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's kubectl (package kubernetes-client) is the judge of kube-sim. It is
# unpacked into .tools/ rather than installed, because some machines already
# have another kubectl at /usr/bin/kubectl and dpkg would refuse the clash.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBECTL="$ROOT/.tools/kubectl"
if [[ ! -x "$KUBECTL" ]]; then
  echo "deps: fetching Debian's kubernetes-client into .tools/"
  tmp="$(mktemp -d)"
  (cd "$tmp" && { apt-get download kubernetes-client >/dev/null 2>&1 ||
                  { $SUDO apt-get update -qq || true; apt-get download kubernetes-client >/dev/null; }; })
  dpkg -x "$tmp"/kubernetes-client_*.deb "$tmp/x"
  mkdir -p "$ROOT/.tools"
  install -m 0755 "$tmp/x/usr/bin/kubectl" "$KUBECTL"
  rm -rf "$tmp"
fi

if ((WITH_TESTS)); then
  UI="$ROOT/tests/ui"
  # Again whenever the lock file changes.
  if [[ ! -f "$UI/node_modules/.package-lock.json" || "$UI/package-lock.json" -nt "$UI/node_modules/.package-lock.json" ]]; then
    echo "deps: npm ci in tests/ui (playwright-core)"
    (cd "$UI" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
