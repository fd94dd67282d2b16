#!/usr/bin/env bash
# Time and randomness reach the components below through eco::Clock and
# eco::Random (src/common/clock.h), so that tests can run them on a fake
# clock and replay a seed. This fails (exit 1, one file:line per finding)
# when code in those components reads the machine's clocks or entropy, sleeps,
# or waits on a condition variable with a timeout itself.
#
#   scripts/check_clock.sh [ROOT]    ROOT: the source tree (default: this repo)
#
# Allowed: an eco::Clock's own calls (clock.WaitFor, clock_.WaitUntil,
# clock.SleepFor, RealClock()): eco's methods are capitalised, the standard
# library's are not, so the patterns below match by case. Comments are not
# code and are skipped.
set -euo pipefail

# Paths left out (none).
EXEMPT=""

CHECKED="src/k8s src/rsync src/status src/scheduler src/appcontext src/controllers src/store/lock* src/agent src/agenthub"

root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"

files=()
for pattern in $CHECKED; do
  for path in $pattern; do
    [ -e "$path" ] || continue
    skip=0
    for e in $EXEMPT; do
      case "$path/" in "$e"/*) skip=1 ;; esac
    done
    [ "$skip" = 1 ] && continue
    while IFS= read -r -d '' f; do
      skip=0
      for e in $EXEMPT; do
        case "$f" in "$e"/*) skip=1 ;; esac
      done
      [ "$skip" = 1 ] || files+=("$f")
    done < <(find "$path" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.inc' \) -print0)
  done
done

[ "${#files[@]}" -gt 0 ] || { echo "check_clock: no source files under $root" >&2; exit 2; }

# Blanks comments (keeping line numbers and string literals), then reports
# every line naming a forbidden clock, sleep, entropy source or timed wait.
perl -e '
  my $bad = qr{
      \b(?:steady|system|high_resolution)_clock\b   # the machine clocks
    | \bsleep_(?:for|until)\b                       # std::this_thread sleeps
    | \brandom_device\b                             # machine entropy
    | \bwait_(?:for|until)\s*\(                     # timed waits of a cv / future
    | (?:\bstd)?::time\s*\(                         # C time: std::time(, ::time(
    | (?<![\w.>:])time\s*\(\s*(?:nullptr|NULL|0)?\s*\)  # time(nullptr), time(0)
    | \b(?:clock_gettime|gettimeofday)\s*\(
  }x;
  my $found = 0;
  for my $f (@ARGV) {
    open(my $fh, "<", $f) or die "check_clock: $f: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    $text =~ s{("(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)|//[^\n]*|/\*(.*?)\*/}{
      defined $1 ? $1 : (defined $2 ? ("\n" x ($2 =~ tr/\n//)) : "")
    }gse;
    my $n = 0;
    for my $line (split /\n/, $text, -1) {
      $n++;
      if ($line =~ $bad) {
        (my $shown = $line) =~ s/^\s+//;
        print "$f:$n: $shown\n";
        $found = 1;
      }
    }
  }
  exit $found;
' "${files[@]}" || {
  rc=$?
  if [ "$rc" = 1 ]; then
    echo "check_clock: the lines above read time or randomness directly; take an eco::Clock& /" \
      "eco::Random& instead (docs/development.md, \"Time and randomness\")" >&2
  fi
  exit "$rc"
}
