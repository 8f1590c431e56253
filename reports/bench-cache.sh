#!/usr/bin/env bash
# bench-cache.sh [ROUNDS] — `avout bench cache-lag` beside Curator's CuratorCache (the peer in
# scenarios/peers/CacheLag.java) on ONE throwaway standalone ZooKeeper, in alternating rounds
# (avout first in odd rounds, Curator first in even ones), and writes reports/bench-cache.md:
# every round's figures and the avout/Curator ratios per round. JSON lines go to $OUT.
# Env: NODES (10000), RATE (1000), DURATION (seconds, 20), PORT (24381), FORCESYNC=no, AVOUT
#      ($CARGO_TARGET_DIR or target, /release/avout), MD (reports/bench-cache.md).
# Needs: cargo build --release -p avout-cli; apt-get install -y zookeeper zookeeper-bin
#        netcat-openbsd libcurator-framework-java libcurator-recipes-java; javac (OpenJDK 17)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=$(cd "$here/../../shared/peers" && pwd)   # for zk-standalone.sh only
ROUNDS=${1:-3}; NODES=${NODES:-10000}; RATE=${RATE:-1000}; SECS=${DURATION:-20}; PORT=${PORT:-24381}
AVOUT=${AVOUT:-${CARGO_TARGET_DIR:-$here/../target}/release/avout}
if [ ! -x "$AVOUT" ]; then
  echo "no avout binary at $AVOUT: cargo build --release -p avout-cli, or set AVOUT" >&2
  exit 2
fi
OUT=${OUT:-$(mktemp "${TMPDIR:-/tmp}/bench-cache.XXXXXX.jsonl")}
MD=${MD:-$here/bench-cache.md}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
"$here/../scenarios/peers/cache-lag.sh" build "$build"
connect=$("$peers/zk-standalone.sh" start "$PORT")
trap '"$peers/zk-standalone.sh" stop "$PORT" 2>/dev/null; rm -rf "$build"' EXIT
echo "# zookeeper $connect forceSync=${FORCESYNC:-yes} NODES=$NODES RATE=$RATE DURATION=$SECS ROUNDS=$ROUNDS -> $OUT" >&2

avout() { "$AVOUT" bench cache-lag --zk "$connect" --nodes "$NODES" --rate "$RATE" --duration "${SECS}s" --json; }
curator() { "$here/../scenarios/peers/cache-lag.sh" run "$build" "$connect" "$NODES" "$RATE" "$SECS"; }

: >"$OUT"
loads=()
# Warms the server's JIT (and the page cache) with a short run of each; results discarded.
"$AVOUT" bench cache-lag --zk "$connect" --nodes 2000 --rate "$RATE" --duration 3s --json >/dev/null
"$here/../scenarios/peers/cache-lag.sh" run "$build" "$connect" 2000 "$RATE" 3 >/dev/null
for r in $(seq "$ROUNDS"); do
  if (( r % 2 )); then order="avout curator"; else order="curator avout"; fi
  loads+=("round $r: $(uptime | sed 's/.*load average: //')")
  echo "# ${loads[-1]}" >&2
  for peer in $order; do
    # A failed check (a write never seen, a view unlike the tree) still prints the line first.
    $peer | sed "s/}\$/,\"round\":$r}/" | tee -a "$OUT" || echo "# round $r: $peer FAILED" >&2
  done
done

python3 - "$OUT" "$ROUNDS" "$NODES" "$RATE" "$SECS" "${FORCESYNC:-yes}" "$(nproc)" "${loads[@]}" >"$MD" <<'PY'
import json, statistics, sys
out, rounds, nodes, rate, secs, fsync, cores = sys.argv[1:8]
loads = sys.argv[8:]
rows = [json.loads(l) for l in open(out)]
get = {(x["peer"], x["round"]): x for x in rows}
rs = sorted({x["round"] for x in rows})
cmd = f"NODES={nodes} RATE={rate} DURATION={secs}" + (" FORCESYNC=no" if fsync == "no" else "") + f" reports/bench-cache.sh {rounds}"
print("# Cache lag: avout's `Cache` beside Curator's `CuratorCache`\n")
print(f"Regenerate (after `cargo build --release -p avout-cli`):\n\n```sh\n{cmd}\n```\n")
print(f"One throwaway standalone ZooKeeper 3.8 (Debian, forceSync={fsync}), {nodes} nodes, a writer at "
      f"{rate} sets/s for {secs} s, open loop. Both programs run the same steps (see "
      "`scenarios/tool/src/cli/cmd/bench/cache_lag.rs` and `scenarios/peers/CacheLag.java`): lag = the "
      "cache's first event for the node at the write's version or later, minus the write's "
      "acknowledgement, on one monotonic clock in one process. avout first in odd rounds, "
      f"Curator first in even ones. The machine has {cores} cores, shared with the server and "
      "whatever else runs; load averages (1, 5, 15 min) when each round started:\n")
for l in loads: print(f"- {l}")
print()
cols = ["load_secs", "ops_per_sec", "events", "lag_p50_us", "lag_p99_us", "lag_p999_us", "lag_max_us",
        "early", "coalesced", "unseen", "duplicates", "regressions", "converged"]
print("| round | peer | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for r in rs:
    for p in ("avout", "curator"):
        x = get.get((p, r))
        cells = [str(x[c]).lower() if x else "FAILED" for c in cols]
        print(f"| {r} | {p} | " + " | ".join(cells) + " |")
print("\navout ÷ Curator per round (below 1: avout's figure is lower, i.e. better):\n")
ratio_cols = ["load_secs", "lag_p50_us", "lag_p99_us", "lag_p999_us", "lag_max_us"]
print("| figure | " + " | ".join(f"round {r}" for r in rs) + " | median |")
print("|---|" + "---|" * (len(rs) + 1))
for c in ratio_cols:
    vals = []
    for r in rs:
        a, b = get.get(("avout", r)), get.get(("curator", r))
        vals.append(a[c] / b[c] if a and b and b[c] > 0 and a[c] > 0 else None)
    shown = ["–" if v is None else f"{v:.2f}" for v in vals]
    ok = [v for v in vals if v is not None]
    med = f"{statistics.median(ok):.2f}" if ok else "–"
    print(f"| {c} | " + " | ".join(shown) + f" | {med} |")
PY
echo "# wrote $MD" >&2
