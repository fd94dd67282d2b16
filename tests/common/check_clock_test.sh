#!/usr/bin/env bash
# scripts/check_clock.sh passes on the tree, and on a tree made to fail it
# fails naming exactly the offending lines (an eco::Clock's own WaitFor and
# SleepFor, and comments, pass).
#   check_clock_test.sh SOURCE_DIR
set -euo pipefail
src=$1
check="$src/scripts/check_clock.sh"

"$check" "$src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/status" "$tmp/src/store" "$tmp/src/rsync"
cat >"$tmp/src/status/fine.cc" <<'EOF'
// Comments may say steady_clock, sleep_for or cv.wait_for(lk, d).
/* and so may
   std::this_thread::sleep_for(d) in a block */
void F(eco::Clock& clock, std::condition_variable& cv, std::unique_lock<std::mutex>& lk) {
  clock.WaitFor(cv, lk, d, [] { return true; });
  clock_.WaitUntil(cv_, lk, t, pred);
  clock.SleepFor(d);
  rec.time();
  cv.wait(lk);
}
EOF
cat >"$tmp/src/status/bad.cc" <<'EOF'
void G() {
  cv_.wait_for(lk, d, pred);
  st->cv.wait_until(lk, t);
  auto t = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(d);
  std::mt19937 rng{std::random_device{}()};
  long s = time(nullptr);
  long u = std::time(0);
}
EOF
cat >"$tmp/src/store/lock.cc" <<'EOF'
auto w = std::chrono::system_clock::now();  // in a checked file of src/store
EOF
# Not checked: other files of src/store. Checked like the others: src/rsync.
echo 'auto t = std::chrono::steady_clock::now();' >"$tmp/src/store/other.cc"
echo 'auto t = std::chrono::steady_clock::now();' >"$tmp/src/rsync/rsync.cc"

set +e
out=$("$check" "$tmp" 2>/dev/null)
rc=$?
set -e
echo "$out"
[ "$rc" = 1 ] || { echo "FAIL: want exit 1, got $rc" >&2; exit 1; }
want="src/rsync/rsync.cc:1 src/status/bad.cc:2 src/status/bad.cc:3 src/status/bad.cc:4 src/status/bad.cc:5 src/status/bad.cc:6 src/status/bad.cc:7 src/status/bad.cc:8 src/store/lock.cc:1"
got=$(echo "$out" | cut -d: -f1,2 | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: reported [$got], want [$want]" >&2; exit 1; }
echo "check_clock_test: ok"
