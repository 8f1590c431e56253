#!/usr/bin/env bash
# Swarm testing against the fixed fault mix (reports/swarm.md): for every planted bug, the
# museum's and avout's own, its finding scenario soaked on N seeds from BASE, one thread,
# once under the fixed mix (`--faults FAULTS`, the chaos rates) and once with each seed
# drawing its own mix of the same kinds (`--faults FAULTS --swarm`). Failing seeds and CPU
# time (user + system, so a busy machine moves the figures little) give failing runs per
# CPU-hour for each, and the summary bugs found per CPU-hour of search.
#
#   bash reports/swarm.sh [N] [BASE] [FAULTS] (N defaults to 1000, BASE to 12430000000,
#                                              FAULTS to all; `every` adds the ensemble's six)
#
# AVOUT: an `avout` binary built with `--features planted-bugs` (else it is built here).
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${1:-1000}
base=${2:-12430000000}
faults=${3:-all}
source reports/planted-avout.sh
out=avout-runs/swarm/$faults
mkdir -p "$out"

# Each bug and the scenario that finds it (its kept case's scenario).
bugs=(
  lock-no-guid-recovery:mutex atom-unchecked-write:counter stm-no-read-point-check:list-append
  stm-barge-committing:bank lock-handoff-without-recheck:mutex stm-session-loss-retried:rw-register
  kazoo-649:rwlock curator-621:rwlock kazoo-732:rwlock curator-335:semaphore
  curator-462:semaphore curator-gh-1290:double-barrier zookeeper-1011:double-barrier
  curator-358:latch curator-16:latch curator-202:latch curator-623:work-queue
  curator-476:cache curator-311:cache
)

# One soak; prints "failing-seeds first-failing-offset cpu-seconds".
soak() {
  local bug=$1 scenario=$2 mode=$3 json="$out/$1.$3.json" t0 t1 me=$BASHPID
  local swarm=()
  [ "$mode" = swarm ] && swarm=(--swarm)
  t0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$me/stat)
  # The children's CPU time is read from `times` after the soak: user + system.
  "$avout" soak --planted "$bug" --scenarios "$scenario" --faults "$faults" "${swarm[@]}" \
    --seeds "$seeds" --base "$base" --threads 1 --repeat 0 --json --out "$out/$bug.$mode" \
    >"$json" 2>/dev/null || true
  t1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$me/stat)
  jq -r --arg base "$base" --arg ticks "$((t1 - t0))" --arg hz "$(getconf CLK_TCK)" \
    '.rows[0] | "\(.failures) \(if .failures > 0 then (.failed_seeds[0] - ($base|tonumber)) else "-" end) \(($ticks|tonumber) / ($hz|tonumber))"' "$json"
}

rate() { awk -v f="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", f * 3600 / s; else print "-" }'; }

{
  echo "| bug | scenario | fixed: failing seeds | fixed: CPU s | fixed: failures per CPU-hour | swarm: failing seeds | swarm: CPU s | swarm: failures per CPU-hour | swarm ÷ fixed |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for entry in "${bugs[@]}"; do
    bug=${entry%%:*} scenario=${entry#*:}
    echo "swarm: $bug ($scenario) ..." >&2
    read -r ff fo fc < <(soak "$bug" "$scenario" fixed)
    read -r sf so sc < <(soak "$bug" "$scenario" swarm)
    fr=$(rate "$ff" "$fc") sr=$(rate "$sf" "$sc")
    ratio=$(awk -v a="$fr" -v b="$sr" 'BEGIN { if (a > 0) printf "%.2f×", b / a; else if (b > 0) print "found only by swarm"; else print "-" }')
    echo "| \`$bug\` | $scenario | $ff/$seeds (first at +$fo) | $fc | $fr | $sf/$seeds (first at +$so) | $sc | $sr | $ratio |"
  done
} | tee "$out/table.md"

# The summary: bugs found (of those soaked), the CPU time until each bug's first failing seed
# (its offset + 1 seeds at the row's mean CPU per seed), and bugs found per CPU-hour of that
# search; failing runs per CPU-hour over all rows; the geometric mean of the per-bug ratios.
awk -F'|' -v n="$seeds" '
  NR > 2 {
    split($4, a, "/"); split($7, b, "/");
    fo = $4; sub(/.*\(first at \+/, "", fo); sub(/\).*/, "", fo);
    so = $7; sub(/.*\(first at \+/, "", so); sub(/\).*/, "", so);
    if (a[1] > 0) { fb++; ft += (fo + 1) * $5 / n }
    if (b[1] > 0) { sb++; st += (so + 1) * $8 / n }
    F += a[1]; S += b[1]; FC += $5; SC += $8;
    if (a[1] > 0 && b[1] > 0) { g += log((b[1] / $8) / (a[1] / $5)); k++ }
  }
  END {
    printf "\n| | fixed mix | swarm |\n|---|---|---|\n"
    printf "| bugs found in %d seeds | %d | %d |\n", n, fb, sb
    printf "| CPU s to each bug'"'"'s first failure, summed | %.2f | %.2f |\n", ft, st
    printf "| bugs found per CPU-hour of search | %.0f | %.0f |\n", fb * 3600 / ft, sb * 3600 / st
    printf "| failing runs per CPU-hour, all rows | %.0f | %.0f |\n", F * 3600 / FC, S * 3600 / SC
    printf "| geometric mean of swarm ÷ fixed, per bug | | %.2f× |\n", exp(g / k)
  }' "$out/table.md" | tee -a "$out/table.md"
