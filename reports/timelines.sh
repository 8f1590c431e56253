#!/usr/bin/env bash
# Regenerates the timeline screenshots README shows (reports/timeline-*.png): the pages
# `avout view` writes, opened in Debian's headless chromium. Run from the repository root.
#   - timeline-mutex-deadlock: the planted lock bug's failing run (`avout run mutex --planted
#     lock-no-guid-recovery --seed 1`), whose page is written beside its case file;
#   - timeline-g-single: the planted STM bug's G-single, shrunk (a kept case file);
#   - timeline-linearizability: Knossos' non-linearizable cas-register history (EDN);
#   - timeline-mutex-overlap: two live holders, from the planted handoff bug's failing run
#     (`avout run mutex --planted lock-handoff-without-recheck --clients 3 --ops 6 --faults
#     session-expiry --fault-rate 0.05 --seed 25`): a waiter between them lost its session.
set -euo pipefail
cd "$(dirname "$0")/.."
out=avout-runs/timelines
rm -rf "$out" && mkdir -p "$out"
# $AVOUT names a binary built with --features planted-bugs; otherwise one is built.
avout=${AVOUT:-}
if [ -z "$avout" ]; then
  cargo build --release -q -p avout-cli --features planted-bugs
  avout="${CARGO_TARGET_DIR:-target}/release/avout"
fi
# Exit 1: the run failed, as it should.
"$avout" run mutex --planted lock-no-guid-recovery --seed 1 --out "$out" >/dev/null || [ $? -eq 1 ]
"$avout" view scenarios/tool/src/view/testdata/list-append-g-single.case.json --out "$out/g-single.html"
"$avout" view scenarios/check/testdata/knossos-cas-register-invalid.edn --model cas-register \
  --out "$out/linearizability.html"
"$avout" run mutex --planted lock-handoff-without-recheck --clients 3 --ops 6 \
  --faults session-expiry --fault-rate 0.05 --seed 25 --out "$out" >/dev/null || [ $? -eq 1 ]
shot() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$out/profile-$2" --hide-scrollbars --window-size=1600,900 \
    --screenshot="reports/$2.png" "$1" 2>/dev/null
  [ -s "reports/$2.png" ]
}
shot "$out/mutex-seed1.html" timeline-mutex-deadlock
shot "$out/g-single.html" timeline-g-single
shot "$out/linearizability.html" timeline-linearizability
shot "$out/mutex-seed25.html" timeline-mutex-overlap
