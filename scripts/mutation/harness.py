"""The mutation harness's pure parts: which files are protocol code, the seeded sample, the
shard partition, resuming, timeouts and applying a mutant. No process is started here, so
`test_mutation.py` tests all of it."""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from pathlib import Path

# Modules of the protocol code: (name, path prefixes in core, soaked scenarios with their STM
# protocol). The longest matching prefix wins (core/src/stm/mvcc/ is stm-mvcc, not stm).
MODULES: list[tuple[str, list[str], list[tuple[str, str]]]] = [
    ("lock", ["core/src/lock/"], [("mutex", "mvcc"), ("rwlock", "mvcc")]),
    ("semaphore", ["core/src/recipes/semaphore/"], [("semaphore", "mvcc")]),
    ("election", ["core/src/recipes/election/"], [("election", "mvcc"), ("latch", "mvcc")]),
    ("barrier", ["core/src/recipes/barrier/"], [("barrier", "mvcc"), ("double-barrier", "mvcc")]),
    ("double-barrier", ["core/src/recipes/double_barrier/"], [("double-barrier", "mvcc")]),
    ("queue", ["core/src/recipes/queue/"], [("queue", "mvcc"), ("work-queue", "mvcc")]),
    ("atom", ["core/src/atom/"], [("counter", "mvcc"), ("lin-kv", "mvcc")]),
    (
        "stm",
        ["core/src/stm/"],
        [
            ("bank", "mvcc"),
            ("list-append", "mvcc"),
            ("bank", "optimistic"),
            ("list-append", "optimistic"),
        ],
    ),
    ("stm-mvcc", ["core/src/stm/mvcc/"], [("bank", "mvcc"), ("list-append", "mvcc")]),
    (
        "stm-optimistic",
        ["core/src/stm/optimistic/"],
        [("bank", "optimistic"), ("list-append", "optimistic")],
    ),
    ("agent", ["core/src/agent/"], [("agents", "mvcc")]),
    ("locktable", ["core/src/locktable/"], [("lock-table", "mvcc")]),
    ("client", ["core/src/client/"], [("sessions", "mvcc"), ("counter", "mvcc"), ("mutex", "mvcc")]),
    (
        "machine",
        ["core/src/machine/"],
        [("mutex", "mvcc"), ("counter", "mvcc"), ("two-phase-commit", "mvcc"), ("lock-table", "mvcc")],
    ),
]
# Not protocol code: tests and test helpers, and the ref stores (no scenario configures one;
# the Postgres store needs a server).
EXCLUDED = re.compile(r"(^|/)[a-z_]*test[a-z_]*\.rs$|^core/src/stm/store/")

# The cargo-mutants marker on every replacement (its diffs show it; applying it too keeps
# our mutated files byte for byte the ones cargo-mutants would build).
MARK = " /* ~ changed by cargo-mutants ~ */"
BASELINE = "(baseline)"
OUTCOMES = ["unit", "model", "soak", "timeout", "missed", "unviable"]
CAUGHT = {"unit", "model", "soak", "timeout"}


def module_of(path: str) -> str | None:
    """The protocol module a core file belongs to, or None."""
    if EXCLUDED.search(path):
        return None
    best = None
    for name, prefixes, _ in MODULES:
        for p in prefixes:
            if path.startswith(p) and (best is None or len(p) > best[1]):
                best = (name, len(p))
    return best[0] if best else None


def soaks_of(module: str) -> list[tuple[str, str]]:
    """The (scenario, protocol) soaks of a module; "all" is every module's, once each."""
    out: list[tuple[str, str]] = []
    for name, _, soaks in MODULES:
        if module in ("all", name):
            out.extend(s for s in soaks if s not in out)
    if not out:
        raise ValueError(f"unknown module {module!r}")
    return out


def splitmix64(state: int) -> tuple[int, int]:
    """One step of SplitMix64: (new state, output). Ours, so a seed draws the same sample on
    every Python (random.sample's algorithm is not promised to stay)."""
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def shuffled(items: list, seed: int) -> list:
    """A Fisher-Yates shuffle driven by SplitMix64 from seed (rejection sampling, no bias)."""
    out = list(items)
    state = seed
    for i in range(len(out) - 1, 0, -1):
        bound = i + 1
        limit = (1 << 64) - (1 << 64) % bound
        while True:
            state, r = splitmix64(state)
            if r < limit:
                break
        j = r % bound
        out[i], out[j] = out[j], out[i]
    return out


def span_text(source: str, span: dict) -> str:
    """The text a cargo-mutants span covers (lines 1-based, columns 1-based, end exclusive)."""
    lines = source.split("\n")
    s, e = span["start"], span["end"]
    a, b = s["line"] - 1, e["line"] - 1
    if a == b:
        return lines[a][s["column"] - 1 : e["column"] - 1]
    middle = lines[a + 1 : b]
    return "\n".join([lines[a][s["column"] - 1 :], *middle, lines[b][: e["column"] - 1]])


def digest(text: str) -> str:
    """A short hash of the text a mutant replaces (the sample keeps it to refuse a changed
    source, without holding whole function bodies)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def apply(source: str, mutant: dict) -> str:
    """source with the mutant's span replaced, as cargo-mutants writes it. Refuses a source
    whose span no longer holds the text the sample was drawn from."""
    span = mutant["span"]
    if digest(span_text(source, span)) != mutant["original"]:
        raise ValueError(f"{mutant['name']}: the source changed under the mutant")
    lines = source.split("\n")
    s, e = span["start"], span["end"]
    a, b = s["line"] - 1, e["line"] - 1
    head = lines[a][: s["column"] - 1]
    tail = lines[b][e["column"] - 1 :]
    return "\n".join([*lines[:a], head + mutant["replacement"] + MARK + tail, *lines[b + 1 :]])


def draw_sample(mutants: list[dict], sources: dict[str, str], seed: int, count: int) -> list[dict]:
    """count mutants of the protocol modules, drawn without replacement by seed; the same
    list and seed give the same sample in the same order (the run's order), whatever order
    cargo-mutants listed them in."""
    pool = sorted(
        (m for m in mutants if module_of(m["file"])), key=lambda m: (m["name"], m["replacement"])
    )
    chosen = shuffled(pool, seed)[:count]
    return [
        {
            "name": m["name"],
            "file": m["file"],
            "module": module_of(m["file"]),
            "genre": m["genre"],
            "span": m["span"],
            "replacement": m["replacement"],
            "original": digest(span_text(sources[m["file"]], m["span"])),
        }
        for m in chosen
    ]


def dump_sample(doc: dict) -> str:
    """The sample file: its header, then one mutant a line (short diffs when redrawn)."""
    head = {k: v for k, v in doc.items() if k != "mutants"}
    lines = [json.dumps(m, sort_keys=True) for m in doc["mutants"]]
    return json.dumps(head, sort_keys=True)[:-1] + ', "mutants": [\n' + ",\n".join(lines) + "\n]}\n"


def population_by_module(mutants: list[dict]) -> dict[str, int]:
    """How many mutants cargo-mutants lists in each protocol module."""
    out: dict[str, int] = {}
    for m in mutants:
        mod = module_of(m["file"])
        if mod:
            out[mod] = out.get(mod, 0) + 1
    return dict(sorted(out.items()))


def parse_shard(text: str) -> tuple[int, int]:
    """"I/N" with 0 <= I < N."""
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not 0 <= int(m[1]) < int(m[2]):
        raise ValueError(f"--shard {text!r}: expected I/N with 0 <= I < N")
    return int(m[1]), int(m[2])


def in_shard(index: int, shard: tuple[int, int]) -> bool:
    return index % shard[1] == shard[0]


def load_results(path: Path) -> dict[str, dict]:
    """The results so far, by mutant name (the last line wins). A torn last line (a run
    killed while writing) is ignored: that mutant runs again."""
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[r["name"]] = r
    return out


def append_result(path: Path, result: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(result, sort_keys=True) + "\n")
        f.flush()


def pending(sample: list[dict], done: dict[str, dict], shard: tuple[int, int]) -> list[dict]:
    """The shard's mutants not yet in the results, in sample order."""
    return [m for i, m in enumerate(sample) if in_shard(i, shard) and m["name"] not in done]


def timeouts(baseline: dict[str, float], factor: float, floor: float) -> dict[str, float]:
    """Each stage's timeout: factor times its baseline, and at least floor seconds more."""
    return {k: max(v * factor, v + floor) for k, v in baseline.items()}


def parse_until(text: str | None, now: datetime.datetime) -> datetime.datetime | None:
    """The next HH:MM UTC within 12 hours of `now` (so 00:30 asked at 23:50 is tomorrow's);
    a time further ahead than that was meant as already past, and the run starts nothing."""
    if text is None:
        return None
    h, m = (int(x) for x in text.split(":"))
    at = now.replace(hour=h, minute=m, second=0, microsecond=0)
    if at <= now and at + datetime.timedelta(days=1) - now <= datetime.timedelta(hours=12):
        at += datetime.timedelta(days=1)
    return at


def nextest_timed_out(log: str) -> bool:
    """Whether nextest killed a test for running past its slow-timeout (a hang, not a
    failed assertion)."""
    return re.search(r"^\s*TIMEOUT \[", log, re.MULTILINE) is not None


def slug(name: str) -> str:
    """A file-name-safe form of a mutant's name, for its logs."""
    return re.sub(r"[^A-Za-z0-9.]+", "_", name)[:120]
