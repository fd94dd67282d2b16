#!/usr/bin/env bash
# Runs the fault-injection suite for a long time: the random-fault run
# (kill -9 of eco api and eco rsync, etcd killed and restarted, clusters
# flapping, during instantiate/update/terminate rounds) for SOAK_SECONDS
# (default 1800), then the kill -9 tests of `eco serve` and the HA test
# SOAK_REPEAT times (default 5), the store model test as many times, and
# the deterministic simulation with SIM_SEEDS fresh seeds (default 50),
# and libFuzzer on every fuzz target for SOAK_FUZZ_SECONDS each (default
# 300; 0 skips), from a random seed, growing build-fuzz/corpus/.
# Every run uses a fresh random seed (CI's runs use fixed ones), printed so
# that a failure can be replayed with ECO_FAULT_SEED=<seed> (ECO_MODEL_SEED
# for the model test).
# Builds first (scripts/build.sh); logs go to build/soak/.
set -euo pipefail
cd "$(dirname "$0")/.."
SOAK_SECONDS=${SOAK_SECONDS:-1800}
SOAK_REPEAT=${SOAK_REPEAT:-5}
scripts/deps.sh >/dev/null
# Unit and simulation tests too (scripts/test.sh leaves them out of build/).
BUILD_DIR=build scripts/build.sh -DECO_SKIP_UNIT_TESTS=OFF
out=build/soak
mkdir -p "$out"
export ECO_BIN_DIR=$PWD/build/bin
export ECO_FAULT_SEED=random ECO_MODEL_SEED=random

rc=0
echo "== random faults for ${SOAK_SECONDS}s (log: $out/fault_suite.log)"
if ECO_SOAK_SECONDS=$SOAK_SECONDS build/bin/fault_suite_tests --gtest_brief=1 >"$out/fault_suite.log" 2>&1; then
  grep -A8 '^fault suite:' "$out/fault_suite.log" || true
else
  rc=1
  echo "FAILED; seed and details:"
  grep -m1 'fault suite seed' "$out/fault_suite.log" || true
  tail -50 "$out/fault_suite.log"
fi

for i in $(seq 1 "$SOAK_REPEAT"); do
  for t in rsync_faults_tests ha_tests; do
    log=$out/$t-$i.log
    if build/bin/$t --gtest_brief=1 >"$log" 2>&1; then
      echo "$t run $i: passed"
    else
      rc=1
      echo "$t run $i: FAILED (log: $log)"
      grep -m1 'seed' "$log" || true
    fi
  done
  log=$out/store_model-$i.log
  if build/tests/store/store_tests --gtest_filter='*StoreModel*' --gtest_brief=1 >"$log" 2>&1; then
    echo "store model run $i: passed"
  else
    rc=1
    echo "store model run $i: FAILED (log: $log)"
    grep -m1 'ECO_MODEL_SEED=' "$log" || true
  fi
done

# The deterministic simulation with SIM_SEEDS seeds (each replays exactly
# with ECO_SIM_SEED=<seed> build/bin/sim_tests).
for i in $(seq 1 "${SIM_SEEDS:-50}"); do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  log=$out/sim-$seed.log
  if ECO_SIM_SEED=$seed build/bin/sim_tests --gtest_brief=1 >"$log" 2>&1; then
    echo "simulation seed $seed: passed"
  else
    rc=1
    echo "simulation seed $seed: FAILED (log: $log; replay: ECO_SIM_SEED=$seed build/bin/sim_tests)"
  fi
done
if (( ${SOAK_FUZZ_SECONDS:-300} > 0 )); then
  echo "== fuzzing, ${SOAK_FUZZ_SECONDS:-300}s per target (scripts/fuzz.sh)"
  FUZZ_SECONDS=${SOAK_FUZZ_SECONDS:-300} FUZZ_SEED=0 scripts/fuzz.sh || rc=1
fi
exit $rc
