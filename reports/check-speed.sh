#!/usr/bin/env bash
# The list-append checker's speed (issue 40, item 4): `avout check --model list-append` beside
# `adya check` on the same files, histories adya's simulated database writes
# (`adya run sim -i serializable -n N -p 8`), rounds alternating which goes first; then avout
# alone on 10 million transactions (adya needs more memory than this machine has for those:
# Elle's README gives about 60 GB for 22 million).
#
#   bash reports/check-speed.sh [ROUNDS] [DIR]
#
# Run it on a quiet machine: the figures are wall-clock and CPU seconds and peak memory
# (/usr/bin/time), and the ratios are per round, then their median. Needs `adya` on the PATH
# (`cargo install adya --no-default-features`) and GNU time; `AVOUT` names a built binary.
# Writes reports/check-speed.md; the histories stay in DIR (default: a temporary directory;
# about 3.6 GB).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
if [ -z "${AVOUT:-}" ]; then
    cargo build --release -q -p avout-cli
    AVOUT="${CARGO_TARGET_DIR:-target}/release/avout"
fi

history() { # N: writes $dir/hN.jsonl once
    local n=$1 out="$dir/h$1.jsonl"
    [ -s "$out" ] && return
    # adya checks what it wrote right after writing it; at 10 million transactions that check
    # alone would exhaust memory, so it is stopped once the file is written.
    adya run sim -i serializable -n "$n" -p 8 -o "$out.tmp" >"$dir/gen$n.log" 2>&1 &
    local pid=$!
    until grep -q '^wrote' "$dir/gen$n.log" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do
        sleep 1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    mv "$out.tmp" "$out"
}

timed() { # TOOL N: one line "tool n elapsed cpu rss_kb verdict"
    local tool=$1 n=$2 f="$dir/h$2.jsonl" out verdict
    out=$(mktemp)
    case $tool in
        avout) /usr/bin/time -f '%e %U %S %M' -o "$out.t" "$AVOUT" check --model list-append "$f" >"$out" || true ;;
        adya) /usr/bin/time -f '%e %U %S %M' -o "$out.t" adya check "$f" >"$out" || true ;;
    esac
    case $tool in
        avout) verdict=$(head -n 1 "$out" | cut -d: -f1) ;;
        adya) verdict="$(cut -f2 "$out" | head -n 1)" ;;
    esac
    read -r e u s m <"$out.t"
    echo "$tool $n $e $(awk "BEGIN { print $u + $s }") $m $verdict"
    rm -f "$out" "$out.t"
}

results="$dir/results.txt"
: >"$results"
for n in 100000 1000000; do
    history "$n"
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then order="avout adya"; else order="adya avout"; fi
        for tool in $order; do
            echo "round $r $(timed "$tool" "$n")" | tee -a "$results" >&2
        done
    done
done
history 10000000
for r in $(seq 1 "$rounds"); do
    echo "round $r $(timed avout 10000000)" | tee -a "$results" >&2
done

python3 - "$results" "$rounds" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(git rev-parse --short HEAD)" \
    "$(nproc)" >reports/check-speed.md <<'PY'
import statistics, sys
path, rounds, when, commit, cores = sys.argv[1:]
rows = {}
for line in open(path):
    _, r, tool, n, e, cpu, rss, *verdict = line.split()
    rows.setdefault((int(n), tool), {})[int(r)] = (float(e), float(cpu), int(rss), " ".join(verdict))
med = statistics.median
print("# The list-append checker beside adya\n")
print("Regenerate (on a quiet machine): `bash reports/check-speed.sh " + rounds + "`\n")
print(f"Taken {when} at {commit} on {cores} cores. Histories written by adya's simulated database "
      "(`adya run sim -i serializable -n N -p 8`, seed 0). Wall-clock and CPU (user + system) "
      "seconds and peak resident memory from GNU time; each figure is the median of the rounds, "
      "each ratio the median of the per-round ratios (the two tools alternate which goes first).\n")
print("| transactions | avout s (CPU s) | adya s (CPU s) | adya ÷ avout, wall per round | avout transactions/s | avout GB | adya GB | verdicts |")
print("|---:|---:|---:|---|---:|---:|---:|---|")
for n in sorted({n for n, _ in rows}):
    a = rows.get((n, "avout"), {})
    d = rows.get((n, "adya"), {})
    ae = med(v[0] for v in a.values())
    ac = med(v[1] for v in a.values())
    arss = max(v[2] for v in a.values()) / 1e6
    tps = f"{n / ae:,.0f}"
    averdict = sorted({v[3] for v in a.values()})
    if d:
        de = med(v[0] for v in d.values())
        dc = med(v[1] for v in d.values())
        ratios = [d[r][0] / a[r][0] for r in sorted(a) if r in d]
        per = " ".join(f"{x:.2f}" for x in ratios)
        drss = f"{max(v[2] for v in d.values()) / 1e6:.2f}"
        dverdict = sorted({v[3] for v in d.values()})
        print(f"| {n:,} | {ae:.2f} ({ac:.2f}) | {de:.2f} ({dc:.2f}) | {per} (median **{med(ratios):.2f}×**) "
              f"| {tps} | {arss:.2f} | {drss} | avout: {', '.join(averdict)}; adya: {', '.join(dverdict)} |")
    else:
        print(f"| {n:,} | {ae:.2f} ({ac:.2f}) | not run | | {tps} | {arss:.2f} | | avout: {', '.join(averdict)} |")
PY
echo "wrote reports/check-speed.md" >&2
