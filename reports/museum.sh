#!/usr/bin/env bash
# The museum's table (reports/museum.md): every museum bug against every scenario, on seeds
# 0..N of the default fault mix, one thread.
#
#   bash reports/museum.sh [N] [BUG ...]      (N defaults to 1000; BUGs default to the museum)
#
# MUSEUM_REUSE_SOAK=1 keeps a bug's soak from an earlier run (avout-runs/museum/BUG.soak.json,
# whatever its seed count, which its row then shows) and redoes only the search, the shrink
# and the page: the soak is nearly all of the time.
#
# For each bug: `avout soak --planted BUG` over every scenario (which scenarios fail it, on how
# many seeds); the scenario failing at the lowest seed is its finder, `avout explore` times the
# search there, `avout shrink` makes its first failing case small, and `avout view` draws the
# shrunk case's page into reports/museum/BUG.html (not kept in git: each page carries the whole
# viewer, so the pages were 13 copies of it; the case file beside it is kept, and its row of the
# table in BUG.row, so a run for a few bugs keeps the others' rows). The table replaces
# the text between the markers in reports/museum.md; the notes below them are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${1:-1000}
shift || true
# AVOUT: an `avout` binary already built with the feature (else it is built here).
source reports/planted-avout.sh
if [ $# -gt 0 ]; then
  bugs=("$@")
else
  # The museum: the planted bugs named after a report (avout's own six are not), as the
  # refusal of an unknown name lists them.
  mapfile -t bugs < <("$avout" run counter --planted '?' 2>&1 | sed -n 's/.*(known: \(.*\))$/\1/p' |
    tr ',' '\n' | tr -d ' ' | grep -E '^(curator|kazoo|zookeeper)-')
fi
out=avout-runs/museum
mkdir -p "$out" reports/museum

row() { echo "$1" >"reports/museum/$bug.row"; }
for bug in "${bugs[@]}"; do
  echo "museum: $bug ..." >&2
  soak="$out/$bug.soak.json"
  if [ -z "${MUSEUM_REUSE_SOAK:-}" ] || [ ! -s "$soak" ]; then
    "$avout" soak --seeds "$seeds" --base 0 --planted "$bug" --threads 1 --json \
      --out "$out/$bug" >"$soak" || true
  fi
  soaked=$(jq -r '.seeds' "$soak")
  # Failing scenarios, lowest first failing seed first: "scenario failures first-seed".
  found=$(jq -r '.rows[] | select(.failures > 0) | "\(.first_failure.seed) \(.scenario) \(.failures)"' \
    "$soak" | sort -n)
  if [ -z "$found" ]; then
    row "| \`$bug\` | **not found** in $soaked seeds | | | | |"
    continue
  fi
  read -r _ finder _ <<<"$(head -1 <<<"$found")"
  failing=$(awk -v n="$soaked" '{printf "%s%s %d/%d", sep, $2, $3, n; sep=", "}' <<<"$found")
  # The search's CPU time (user + system, one thread): the machine may be shared, so its
  # wall time says little.
  cpu=$({
    TIMEFORMAT='%U %S'
    time "$avout" explore "$finder" --planted "$bug" --seeds "0..$seeds" --threads 1 --json \
      --out "$out/$bug/explore" >"$out/$bug.explore.json" 2>"$out/$bug.explore.err" || true
  } 2>&1)
  explore=$(cat "$out/$bug.explore.json")
  to_find=$(jq -r '.seeds_to_first_failure' <<<"$explore")
  secs=$(awk '{ printf "%.2f", $1 + $2 }' <<<"$cpu")
  case=$(jq -r '.failures[0].case' <<<"$explore")
  anomaly=$(jq -r '.failures[0].anomalies[0] | split("\n")[0] | .[0:140]' <<<"$explore")
  # The shrunk case is the bug's kept regression case (its test: scenarios/library/tests/it/museum.rs).
  kept=scenarios/regressions/$bug.json
  shrunk=$("$avout" shrink "$case" --budget 20000 --json --out "$kept" || true)
  rm -f "${kept%.json}.html" # shrink draws its page beside the case: the page goes below
  from=""
  # A shrink is a search from one failure: when the first failing seed's does not reach the
  # goal (at most 10 steps, faults scheduled), the finder's next failing seeds (up to three)
  # are shrunk too and the smallest case of the same kind kept (Curator #1290: its first
  # seed stops at 24 steps; the next three shrink to 7, 4 (a hang, not an early entry) and 6).
  small() { jq -e '.steps_after <= 10 and .explicit_schedule' <<<"$1" >/dev/null; }
  if ! small "$shrunk"; then
    for next in $(jq -r --arg f "$finder" '.rows[] | select(.scenario == $f) | .failed_seeds[1:4][]' "$soak"); do
      "$avout" explore "$finder" --planted "$bug" --seeds "$next..$((next + 1))" --threads 1 \
        --json --out "$out/$bug/seed$next" >"$out/$bug.seed$next.json" 2>/dev/null || true
      other=$(jq -r '.failures[0].case' "$out/$bug.seed$next.json")
      tried=$("$avout" shrink "$other" --budget 20000 --json --out "$out/$bug/seed$next.shrunk.json" || true)
      # Only a failure of the first one's kind (its first word: `liveness:` or a safety
      # anomaly's subject) stands for the bug as the first seed showed it.
      kind=$(jq -r '.failures[0].anomalies[0] | split(" ")[0]' "$out/$bug.seed$next.json")
      if [ "$kind" = "${anomaly%% *}" ] &&
        [ "$(jq -r '.steps_after' <<<"$tried")" -lt "$(jq -r '.steps_after' <<<"$shrunk")" ]; then
        shrunk=$tried from=" (from seed $next)"
        cp "$out/$bug/seed$next.shrunk.json" "$kept"
        anomaly=$(jq -r '.failures[0].anomalies[0] | split("\n")[0] | .[0:140]' "$out/$bug.seed$next.json")
      fi
    done
  fi
  steps=$(jq -r '"\(.steps_after) steps (\(.clients) × \(.ops_per_client) ops, \(.faults_fired_before) → \(.faults_scheduled_after) faults)"' <<<"$shrunk")$from
  "$avout" view "$kept" --out "reports/museum/$bug.html" >/dev/null
  row "| \`$bug\` | $finder | $to_find ($secs s) | $steps | $failing | [case](../scenarios/regressions/$bug.json): ${anomaly//|/\\|} |"
done
# Every bug's row, the museum's order (a run for a few bugs keeps the others' rows).
mapfile -t all < <("$avout" run counter --planted '?' 2>&1 | sed -n 's/.*(known: \(.*\))$/\1/p' |
  tr ',' '\n' | tr -d ' ')
rows=()
for bug in "${all[@]}"; do
  if [ -f "reports/museum/$bug.row" ]; then rows+=("$(cat "reports/museum/$bug.row")"); fi
done

table=$(
  echo "| bug | found by | seeds to first failure (explore, 1 thread: CPU s) | shrunk | scenarios failing (seeds of those soaked) | shrunk case |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
)
# Replace the text between the markers, keeping the rest of the file.
table=$table awk '
  /<!-- museum:begin -->/ { print; print ENVIRON["table"]; skip = 1; next }
  /<!-- museum:end -->/ { skip = 0 }
  !skip { print }
' reports/museum.md >reports/museum.md.new
mv reports/museum.md.new reports/museum.md
echo "museum: reports/museum.md written" >&2
