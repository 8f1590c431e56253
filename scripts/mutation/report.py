"""reports/mutation.md from the sample, the results and the triage of missed mutants."""

from __future__ import annotations

import math

import harness

COMMAND = "python3 scripts/mutation/mutation.py report"
# A missed mutant's triage: equivalent (no run can tell it apart), test code (cargo-mutants
# listed code that only a test build compiles, behind a gate it does not read, such as
# `#[cfg(all(test, loom))]`; the oracle never builds it, so it is not scored, like an
# equivalent one), or a blind spot (scored as missed).
VERDICTS = {"equivalent": "equivalent", "test-code": "test_code", "blind-spot": "blind"}
RUN = "nice -n 19 python3 scripts/mutation/mutation.py run --until HH:MM [--shard I/N]"


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def tally(results: list[dict], triage: dict[str, dict]) -> dict[str, int]:
    """Counts of one group of results: each outcome, the missed split by triage, and the
    score's numerator and denominator (caught over the viable, non-equivalent mutants;
    timeouts count as caught)."""
    t = {k: 0 for k in harness.OUTCOMES}
    t.update(tried=len(results), equivalent=0, test_code=0, blind=0, untriaged=0, closed=0)
    for r in results:
        t[r["outcome"]] += 1
        if r["outcome"] == "missed":
            entry = triage.get(r["name"], {})
            verdict = entry.get("verdict")
            key = VERDICTS.get(verdict, "untriaged")
            t[key] += 1
            # A blind spot a test added since closes (the mutant checked by hand to fail it).
            t["closed"] += key == "blind" and bool(entry.get("closed_by"))
    t["caught"] = sum(t[k] for k in harness.CAUGHT)
    t["scored"] = t["tried"] - t["unviable"] - t["equivalent"] - t["test_code"]
    return t


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def score_cell(t: dict[str, int], closed: bool = False) -> str:
    if t["scored"] == 0:
        return "n/a"
    caught = t["caught"] + (t["closed"] if closed else 0)
    lo, hi = wilson(caught, t["scored"])
    return f"{pct(caught / t['scored'])} [{pct(lo)}, {pct(hi)}]"


def render(doc: dict, results: dict[str, dict], triage: dict[str, dict]) -> str:
    """The report: the command, the sample, per module counts, the score and the triage."""
    sample = doc["mutants"]
    names = {m["name"] for m in sample}
    run = [results[m["name"]] for m in sample if m["name"] in results]
    stray = sorted(n for n in results if n not in names and n != harness.BASELINE)
    modules = list(doc["population"])
    by_module = {mod: [r for r in run if r["module"] == mod] for mod in modules}
    sampled = {mod: sum(1 for m in sample if m["module"] == mod) for mod in modules}
    total = tally(run, triage)
    secs = [r["total_seconds"] for r in run]
    out = [
        "# Mutation score of the protocol code",
        "",
        f"Regenerate: `{COMMAND}`. Run or resume the sample (skips what `results.jsonl` holds):",
        f"`{RUN}`; the sample itself: `python3 scripts/mutation/mutation.py sample "
        f"--seed {doc['seed']} --count {doc['count']} --commit {doc['commit'][:12]}`.",
        "",
        f"**{len(run)} of {len(sample)} sampled mutants run** (seed {doc['seed']}, from "
        f"{sum(doc['population'].values())} cargo-mutants mutants in the protocol modules of "
        f"core at {doc['commit'][:12]}). The sample's order is random, so the mutants run so "
        "far are themselves a random sample of it.",
        "",
        "Oracle, stopping at the first stage that catches: `unit` = `cargo nextest run -p "
        "avout`, then core's doc examples; `model` = `cargo nextest run -p avout-models`; `soak` = `avout soak` of the "
        "module's scenarios (below). `timeout` counts as caught, as cargo-mutants counts it. "
        "Score = caught / (tried - unviable - equivalent - test code), with its 95% Wilson "
        "interval. A missed mutant in code only a test build compiles (a `#[cfg(all(test, "
        "loom))]` module, which cargo-mutants does not recognise as tests) is `test code`.",
        "",
        "| module | population | sampled | tried | unit | model | soak | timeout | missed "
        "(equiv. / test code / blind / untriaged) | unviable | score [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for mod in modules:
        t = tally(by_module[mod], triage)
        out.append(
            f"| {mod} | {doc['population'][mod]} | {sampled[mod]} | {t['tried']} | {t['unit']} "
            f"| {t['model']} | {t['soak']} | {t['timeout']} | {t['missed']} ({t['equivalent']} "
            f"/ {t['test_code']} / {t['blind']} / {t['untriaged']}) | {t['unviable']} | {score_cell(t)} |"
        )
    out.append(
        f"| **all** | {sum(doc['population'].values())} | {len(sample)} | {total['tried']} "
        f"| {total['unit']} | {total['model']} | {total['soak']} | {total['timeout']} "
        f"| {total['missed']} ({total['equivalent']} / {total['test_code']} / {total['blind']} / "
        f"{total['untriaged']}) | {total['unviable']} | {score_cell(total)} |"
    )
    out += ["", f"Score over the viable mutants, equivalent ones and test code left out: **{score_cell(total)}**."]
    if total["closed"]:
        out.append(
            f"With the {total['closed']} blind spots closed since by new tests (each of those "
            f"mutants applied by hand to a tree with its new test, and seen to fail it): "
            f"**{score_cell(total, closed=True)}**. The table counts them as missed: the sample "
            f"stays pinned to its commit."
        )
    if secs:
        left = len(sample) - len(run)
        rest = (
            f"; the {left} left need about {left * sum(secs) / len(secs) / 3600:.1f} h at that rate"
            if left
            else ""
        )
        out.append(
            f"Time per mutant (`nice -n 19` on a shared 2-core machine; the first 99 with one build job "
            f"and one test thread, the rest with two of each): mean "
            f"{sum(secs) / len(secs):.0f} s, median {sorted(secs)[len(secs) // 2]:.0f} s, "
            f"total {sum(secs) / 3600:.2f} h{rest}."
        )
    base = results.get(harness.BASELINE)
    if base:
        b = base["seconds"]
        soaks = sum(v for k, v in b.items() if k.startswith("soak:"))
        out.append(
            f"Baseline (the unmutated tree through every stage, which it must pass): unit "
            f"{b.get('unit', 0):.0f} s, model {b.get('model', 0):.0f} s, every soak "
            f"{soaks:.0f} s together. A mutant's core is rebuilt before stage 1 and the "
            "release CLI before stage 3; those builds dominate the time per mutant."
        )
    out += [
        "",
        "Notes: nextest runs no doctests, so stage 1 also runs `cargo test --doc -p avout` "
        "(`by` = `doc`). nextest kills a test after 2 minutes (`scripts/mutation/nextest.toml`); the harness "
        "records that, or a stage outliving 3 times its baseline, as `timeout`.",
    ]
    out += ["", "## Soaked scenarios per module", "", "| module | files | soaks |", "|---|---|---|"]
    for name, prefixes, soaks in harness.MODULES:
        cells = ", ".join(f"{s} ({p})" for s, p in soaks)
        out.append(f"| {name} | {', '.join(f'`{p}`' for p in prefixes)} | {cells} |")
    out += [
        "",
        "Files whose name holds `test` and the ref stores (`core/src/stm/store/`) are not "
        "protocol code and are left out.",
        "",
        "## Missed mutants",
        "",
    ]
    missed = [r for r in run if r["outcome"] == "missed"]
    if not missed:
        out.append("None so far.")
    else:
        out += ["| mutant | verdict | why / what should catch it |", "|---|---|---|"]
        for r in missed:
            t = triage.get(r["name"], {})
            why = t.get("why", "not yet triaged").replace("|", "\\|")
            out.append(f"| `{r['name']}` | {t.get('verdict', 'untriaged')} | {why} |")
    out += ["", "## Every mutant run", "", "| mutant | outcome | caught by | s |", "|---|---|---|---:|"]
    for r in run:
        out.append(
            f"| `{r['name']}` | {r['outcome']} | {r.get('by', '')} | {r['total_seconds']:.0f} |"
        )
    if stray:
        out += ["", f"Results not in the sample (ignored): {len(stray)}."]
    return "\n".join(out) + "\n"
