#!/usr/bin/env bash
# Measures how fast a 10,000-operation timeline page draws in a real browser, and its size:
# a lin-kv run of 5 clients × 2,000 operations, its page from `avout view`, opened in Debian's
# headless chromium three times. The page stamps on <body> the milliseconds since navigation
# began at which its data was parsed, its first drawing was done, and that drawing was painted
# (data-parsed-ms, data-render-ms, data-painted-ms). Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
out=avout-runs/timeline-render
rm -rf "$out" && mkdir -p "$out"
avout=${AVOUT:-}
if [ -z "$avout" ]; then
  cargo build --release -q -p avout-cli
  avout="${CARGO_TARGET_DIR:-target}/release/avout"
fi
"$avout" run lin-kv --clients 5 --ops 2000 --seed 77 --out "$out" --history "$out/h.jsonl" >/dev/null
"$avout" view "$out/h.jsonl" --out "$out/page.html" >/dev/null
echo "page: $(grep -c '"type":"invoke"' "$out/h.jsonl") operations, $(stat -c %s "$out/page.html") bytes"
for i in 1 2 3; do
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$out/profile-$i" --window-size=1600,1000 \
    --dump-dom "file://$(realpath "$out/page.html")" 2>/dev/null >"$out/dom-$i.html"
  echo "load $i: $(grep -o 'data-[a-z]*-ms="[0-9.]*"' "$out/dom-$i.html" | tr '\n' ' ')"
done
