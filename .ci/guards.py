#!/usr/bin/env python3
"""The tree's guards: no Rust source file over 800 lines, and duplicated code under a ceiling.

Sizes: every tracked `.rs` file has at most `MAX_LINES` lines (the house rule; aim for 600).

Duplicates: two places repeat each other when they share a run of at least `RUN` identical
lines, where a line is a tracked `.rs` file's line with its white space folded and blank
lines, comment lines, lone punctuation and `use` lines passed over (what `duplicates` passes
over). A run that stands in more than `COMMON` places is an idiom, not a copy, and is not
counted. The count is of pairs of files (a file with itself included) that share at least one
such run; it must stay at most the ceiling (`.ci/guards` passes it). Pairs are listed, most
shared lines first, so that a failure says where to look.

Python's standard library only: CI's fresh machine has no `duplicates`, and a Rust binary
would cost a build of its own for a few dozen lines of text handling.
"""

import collections
import re
import subprocess
import sys

MAX_LINES = 800
RUN = 6
COMMON = 8

PUNCT = re.compile(r"^[\s{}()\[\];,.&|?=>-]*$")


def tracked_rust_files():
    out = subprocess.run(
        ["git", "ls-files", "-z", "*.rs"], check=True, capture_output=True
    ).stdout
    return [p for p in out.decode().split("\0") if p]


def significant(text):
    """The file's counted lines: (line number, folded text)."""
    lines = []
    in_block = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = " ".join(raw.split())
        if in_block:
            if "*/" in line:
                in_block = False
            continue
        if line.startswith("/*"):
            in_block = "*/" not in line
            continue
        if not line or line.startswith("//") or PUNCT.match(line):
            continue
        if line.startswith(("use ", "pub use ", "pub(crate) use ", "mod ", "pub mod ")):
            continue
        lines.append((number, line))
    return lines


def sizes(files, texts):
    over = []
    for path in files:
        count = texts[path].count("\n")
        if count > MAX_LINES:
            over.append((path, count))
    return over


def duplicate_pairs(files, texts):
    """Pairs of files sharing a run of `RUN` counted lines: {(a, b): [(line a, line b), ...]}."""
    windows = collections.defaultdict(list)
    for path in files:
        lines = significant(texts[path])
        for i in range(len(lines) - RUN + 1):
            key = "\n".join(text for _, text in lines[i : i + RUN])
            windows[key].append((path, i, lines[i][0]))
    shared = collections.defaultdict(set)
    for places in windows.values():
        if len(places) < 2 or len(places) > COMMON:
            continue
        for x in range(len(places)):
            for y in range(x + 1, len(places)):
                (pa, ia, la), (pb, ib, lb) = sorted([places[x], places[y]])
                if pa == pb and abs(ia - ib) < RUN:
                    continue  # a run overlapping itself (a repeated line) is no copy
                shared[(pa, pb)].add((ia, ib, la, lb))
    return shared


def main():
    ceiling = int(sys.argv[1]) if len(sys.argv) > 1 else None
    files = tracked_rust_files()
    texts = {}
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[path] = f.read()
    status = 0

    for path, count in sizes(files, texts):
        print(f"{path} has {count} lines (at most {MAX_LINES})", file=sys.stderr)
        status = 1

    pairs = duplicate_pairs(files, texts)
    ranked = sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for (a, b), windows in ranked:
        first = min(windows)
        print(f"  {a}:{first[2]} ~ {b}:{first[3]} ({len(windows)} shared runs of {RUN})")
    print(f"{len(pairs)} pairs of files share runs of {RUN} or more lines")
    if ceiling is not None and len(pairs) > ceiling:
        print(
            f"duplicated code grew: {len(pairs)} pairs, the ceiling is {ceiling}; fold what a "
            "change wrote twice into one piece (the pairs are listed above)",
            file=sys.stderr,
        )
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
