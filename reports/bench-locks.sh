#!/usr/bin/env bash
# bench-locks.sh [ROUNDS] — avout's recipe benchmarks beside the Curator and kazoo peers
# (../shared/peers), all against ONE throwaway standalone ZooKeeper in one run.
# Each round runs every workload for the three peers, in an order that rotates per round so no
# peer always meets the server right after another; then prints a markdown table of medians
# and of per-round ratios. JSON lines go to $OUT (default: a temp file, path on stderr).
# Env: N (500), CLIENTS (4), PORT (24281), FORCESYNC=no, AVOUT (target/release/avout).
# Needs: cargo build --release -p avout-cli; apt-get install -y zookeeper zookeeper-bin
#        netcat-openbsd python3-kazoo libcurator-framework-java libcurator-recipes-java
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=$(cd "$here/../../shared/peers" && pwd)
ROUNDS=${1:-3}; N=${N:-500}; CLIENTS=${CLIENTS:-4}; PORT=${PORT:-24281}
AVOUT=${AVOUT:-$here/../target/release/avout}
OUT=${OUT:-$(mktemp "${TMPDIR:-/tmp}/bench-locks.XXXXXX.jsonl")}
J=/usr/share/java
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -Xlint:-path -d "$build" -cp "$J/curator-client.jar:$J/curator-framework.jar:$J/curator-recipes.jar" "$peers/Peers.java"
connect=$("$peers/zk-standalone.sh" start "$PORT")
trap '"$peers/zk-standalone.sh" stop "$PORT" 2>/dev/null; rm -rf "$build"' EXIT
echo "# zookeeper $connect forceSync=${FORCESYNC:-yes} N=$N CLIENTS=$CLIENTS ROUNDS=$ROUNDS -> $OUT" >&2

curator() { java -cp "$J/curator-recipes.jar:$J/slf4j-nop.jar:$build" Peers "$@"; }
kazoo() { /usr/bin/python3 "$peers/peers_kazoo.py" "$@"; }
avout() { # the peers' positional arguments, as avout's options
  local w=$1 c=$2
  case $w in *-contended) "$AVOUT" bench "$w" --zk "$c" --clients "$3" --n "$4" ;;
             *) "$AVOUT" bench "$w" --zk "$c" --n "$3" ;; esac
}

: >"$OUT"
kazoo lock-cycle "$connect" 300 >/dev/null   # warm the server's JIT; result discarded
orders=("curator kazoo avout" "avout curator kazoo" "kazoo avout curator")
for r in $(seq "$ROUNDS"); do
  order=${orders[$(( (r - 1) % 3 ))]}
  echo "# round $r: $(uptime | sed 's/.*load/load/')" >&2
  for w in lock-cycle lock-contended rwlock-read counter counter-contended; do
    case $w in *-contended) sizes=("$CLIENTS" "$N") ;; *) sizes=("$N") ;; esac
    for peer in $order; do
      $peer "$w" "$connect" "${sizes[@]}" | sed "s/}\$/,\"round\":$r}/" | tee -a "$OUT"
    done
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
works = ["lock-cycle", "lock-contended", "rwlock-read", "counter", "counter-contended"]
def rate(w, p, r): return next(x["ops_per_sec"] for x in rows if (x["workload"], x["peer"], x["round"]) == (w, p, r))
rounds = sorted({x["round"] for x in rows})
print("| workload | clients | avout ops/s | Curator ops/s | kazoo ops/s | avout/Curator per round | median | avout/kazoo median |")
print("|---|---|---|---|---|---|---|---|")
for w in works:
    med = {p: statistics.median(rate(w, p, r) for r in rounds) for p in ("avout", "curator", "kazoo")}
    vs_c = [rate(w, "avout", r) / rate(w, "curator", r) for r in rounds]
    vs_k = [rate(w, "avout", r) / rate(w, "kazoo", r) for r in rounds]
    clients = next(x["clients"] for x in rows if x["workload"] == w)
    print(f"| {w} | {clients} | {med['avout']:.1f} | {med['curator']:.1f} | {med['kazoo']:.1f} | "
          f"{' '.join(f'{v:.2f}' for v in vs_c)} | {statistics.median(vs_c):.2f}x | {statistics.median(vs_k):.2f}x |")
PY
