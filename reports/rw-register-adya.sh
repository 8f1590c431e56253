#!/usr/bin/env bash
# avout's rw-register checker beside adya's (`adya check -m rw-register`), on the same files
# (issue 37, item 4): the hand-written histories of avout_check::rw_register::corpus, histories
# adya's own simulated database writes at each isolation level, and histories of avout's
# rw-register scenario under both STM protocols.
#
#   bash reports/rw-register-adya.sh [DIR]
#
# Needs `adya` on the PATH (`cargo install adya`, 0.1.0). Both judge strict serializability;
# adya is given `--wfr-keys`, the writes-follow-reads order avout's checker always assumes.
# Writes the table to reports/rw-register-adya.md and the histories to DIR (default: a
# temporary directory). Kinds are compared by base name: adya reports a cycle with and
# without real-time or process edges (`G2-item`, `G2-item-realtime`), avout the weakest order
# that shows it, and adya's `G-single-item`/`G-nonadjacent-item` are avout's
# `G-single`/`G-nonadjacent`. `AVOUT` names a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-$(mktemp -d)}
mkdir -p "$dir/hand" "$dir/adya" "$dir/avout"
if [ -z "${AVOUT:-}" ]; then
    cargo build --release -q -p avout-cli
    AVOUT="${CARGO_TARGET_DIR:-target}/release/avout"
fi
cargo run -q -p avout-check --features synth --example rw_register_corpus -- "$dir/hand"
for level in serializable snapshot-isolation read-committed read-uncommitted lost-update; do
    for seed in 1 2; do
        adya run sim -m rw-register -i "$level" -n 300 -p 4 --keys 4 --seed "$seed" \
            -o "$dir/adya/$level-$seed.jsonl" >/dev/null || true
    done
done
for protocol in mvcc optimistic; do
    for seed in 1 2; do
        (cd "$dir/avout" && "$AVOUT" run rw-register --seed "$seed" --faults every \
            --protocol "$protocol" >/dev/null || true)
        mv "$dir/avout/avout-runs/rw-register-seed$seed.jsonl" "$dir/avout/$protocol-$seed.jsonl"
    done
done

python3 - "$dir" "$AVOUT" > reports/rw-register-adya.md <<'PY'
import json, subprocess, sys, pathlib

d, avout = pathlib.Path(sys.argv[1]), sys.argv[2]

def base(kind):
    for suffix in ("-realtime", "-process"):
        kind = kind.removesuffix(suffix)
    return {"G-single-item": "G-single", "G-nonadjacent-item": "G-nonadjacent"}.get(kind, kind)

def ours(f):
    out = subprocess.run([avout, "check", str(f), "--model", "rw-register", "--json"],
                         capture_output=True, text=True)
    v = json.loads(out.stdout)
    return v["valid"], v["anomalies"]

def adya(f):
    out = subprocess.run(["adya", "check", "-m", "rw-register", "--wfr-keys",
                          "-c", "strict-serializable", "--json", str(f)],
                         capture_output=True, text=True)
    v = json.loads(out.stdout)
    return v["valid"], v["anomaly_types"]

print("# avout's rw-register checker beside adya's\n")
print("`bash reports/rw-register-adya.sh` (adya 0.1.0, `adya check -m rw-register --wfr-keys "
      "-c strict-serializable`; avout `check --model rw-register`, strict serializability). "
      "`hand/` are avout_check::rw_register::corpus, `adya/` adya's simulated database at each "
      "isolation level (`adya run sim -m rw-register -n 300 -p 4 --keys 4`), `avout/` the "
      "rw-register scenario under every fault kind.")
print("Kinds compare by base name (see the script): *only avout* and *only adya* are the base "
      "kinds one reports and the other does not.\n")
print("| history | avout | adya | same verdict | only avout | only adya |")
print("|---|---|---|---|---|---|")
same_verdict = total = 0
for group in ("hand", "adya", "avout"):
    for f in sorted((d / group).glob("*.jsonl")):
        (ov, ok), (av, ak) = ours(f), adya(f)
        same = ov == (av is True) if av in (True, False) else None
        same_verdict += same is True
        total += 1
        bo, ba = {base(k) for k in ok}, {base(k) for k in ak if k != "empty-transaction-graph"}
        show = lambda valid, kinds: "valid" if valid is True else ", ".join(kinds) or str(valid)
        verdict = {True: "yes", False: "**no**", None: f"adya: {av}"}[same]
        print(f"| {group}/{f.stem} | {show(ov, ok)} | {show(av, ak)} | {verdict} | "
              f"{', '.join(sorted(bo - ba))} | {', '.join(sorted(ba - bo))} |")
print(f"\nThe same verdict on {same_verdict} of {total} histories.")
print("""
## Where they differ, and who is right

- **adya cannot judge** `future-read`, `garbage-read` and `valid-concurrent` (its
  `empty-transaction-graph`: no dependency edge, verdict unknown). avout finds a read of a
  value the transaction itself writes only later, and a read of a value nobody wrote: neither
  can happen in any execution whose reads see written versions, so avout is right to fail
  them; adya has no such rule for registers. Three unrelated transactions are valid for avout
  (no anomaly) and unknown for adya (Elle's convention); both find nothing wrong.
- **Kinds one reports besides the other's** (same verdict): in `g0`, avout reports the G1c
  beside the G0 (T0 and T1 each read the other's write: a pure `wr` cycle, G1c by Adya's
  definition); in `adya/read-uncommitted-1`, avout reports G2-item cycles adya does not (two
  concurrent transactions each read a key as `nil` that the other wrote: write skew). adya
  skips an anomaly once what it found already rules out the models the other would (its
  README: "anything implied by what was found is skipped"); avout searches every kind in every
  component, as Elle does, so both are right and avout says more.
- **`-process` for `-realtime`** (`g-single-process`, `adya/snapshot-isolation-2`): the same
  cycle, closed by one process's consecutive transactions; avout names each cycle by the
  weakest order edges that close it (process order is part of real time), adya by the model's
  edges.

The planted STM bugs' histories (a planted build: `avout run rw-register --planted BUG`)
agree too: `stm-no-read-point-check` (Mvcc, seed 29) G-single for both;
`stm-session-loss-retried` (Mvcc, seed 6) G1a and G2-item for both, (Optimistic, seed 60)
G1a for both.""")
PY
cat reports/rw-register-adya.md
