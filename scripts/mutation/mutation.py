#!/usr/bin/env python3
"""A mutation score for avout's protocol code (issue 37, item 2).

cargo-mutants lists the mutants of core (`cargo mutants --list -p avout --json`); this
harness draws a seeded sample of those in the protocol modules, applies each in a scratch
copy of the tree, and runs a three-stage oracle, stopping at the first stage that fails:

1. `unit`: core's own tests (`cargo nextest run -p avout`);
2. `model`: the models' tests (`cargo nextest run -p avout-models`);
3. `soak`: `avout soak` of the scenarios that exercise the mutated module, on SEEDS seeds.

A mutant whose core does not build is `unviable`; one whose stage outlives its timeout is
`timeout` (caught, as cargo-mutants counts it, but listed apart); one that passes all three
stages is `missed`. Each result is one line of a JSONL file, written as soon as it is known,
so a run stopped at any point resumes where it was (`run` skips mutants already in the
file), and `--shard I/N` runs the sample's I-th slice of N (index mod N), so N machines
share the sample.

    python3 scripts/mutation/mutation.py sample   # draw reports/mutation/sample.json
    python3 scripts/mutation/mutation.py run [--shard I/N] [--until HH:MM]
    python3 scripts/mutation/mutation.py report   # write reports/mutation.md

Standard library only. The pure parts (sampling, sharding, resume, arithmetic) are in
`harness.py` and tested by `test_mutation.py`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "reports" / "mutation"
SAMPLE = OUT / "sample.json"
RESULTS = OUT / "results.jsonl"
TRIAGE = OUT / "triage.json"
REPORT = ROOT / "reports" / "mutation.md"

# Where the mutants are built: a copy of the sampled commit's tree and its own target dir
# (cargo keys path dependencies by relative path, so a copy never shares a target dir).
SCRATCH = Path(os.environ.get("MUTATION_SCRATCH", "/work/target/mutants-src"))
TARGET = Path(os.environ.get("MUTATION_TARGET", "/work/target/mutants-run"))
NEXTEST_CONFIG = Path(__file__).resolve().parent / "nextest.toml"
SOAK_BUILD_PROFILE = {
    "CARGO_PROFILE_RELEASE_OPT_LEVEL": "1",
    "CARGO_PROFILE_RELEASE_INCREMENTAL": "true",
    "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "256",
    "CARGO_PROFILE_RELEASE_DEBUG": "false",
}


def log(msg: str) -> None:
    print(f"[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {msg}", flush=True)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def cmd_sample(a: argparse.Namespace) -> int:
    commit = git("rev-parse", a.commit).strip()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            f"git archive {commit} | tar -x -C {tmp}", shell=True, cwd=ROOT, check=True
        )
        listed = subprocess.run(
            ["cargo", "mutants", "--list", "-p", "avout", "--json"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        mutants = json.loads(listed)
        sources = {
            m["file"]: (Path(tmp) / m["file"]).read_text()
            for m in mutants
            if harness.module_of(m["file"])
        }
    sample = harness.draw_sample(mutants, sources, a.seed, a.count)
    doc = {
        "commit": commit,
        "seed": a.seed,
        "count": a.count,
        "population": harness.population_by_module(mutants),
        "mutants": sample,
    }
    SAMPLE.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE.write_text(harness.dump_sample(doc))
    log(f"{len(sample)} mutants of {sum(doc['population'].values())} drawn (seed {a.seed})")
    return 0


class Runner:
    """Runs the oracle's commands in the scratch tree, each in its own process group."""

    def __init__(self, a: argparse.Namespace, commit: str):
        self.a = a
        self.commit = commit
        self.env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET), CARGO_TERM_COLOR="never")
        self.env.setdefault("CARGO_BUILD_JOBS", str(a.jobs))
        self.logs = Path(a.logs)
        self.logs.mkdir(parents=True, exist_ok=True)

    def prepare(self) -> None:
        """Extract the sampled commit into the scratch dir, or put its files back as they
        were (a run killed mid-mutant leaves one file mutated)."""
        stamp = SCRATCH / ".mutation-commit"
        if not stamp.exists() or stamp.read_text().strip() != self.commit:
            if SCRATCH.exists():
                shutil.rmtree(SCRATCH)
            SCRATCH.mkdir(parents=True)
            subprocess.run(
                f"git archive {self.commit} | tar -x -C {SCRATCH}",
                shell=True,
                cwd=ROOT,
                check=True,
            )
            stamp.write_text(self.commit + "\n")
        for f in sorted(set(m["file"] for m in self.sample_files)):
            pristine = git("show", f"{self.commit}:{f}")
            # Only a changed file is written: a new mtime would rebuild core for nothing.
            if (SCRATCH / f).read_text() != pristine:
                (SCRATCH / f).write_text(pristine)

    def sh(
        self, argv: list[str], timeout: float, log_name: str, env: dict | None = None
    ) -> tuple[str, float]:
        """Run argv; return ("ok" | "fail" | "timeout", seconds)."""
        started = time.monotonic()
        with open(self.logs / log_name, "w") as out:
            p = subprocess.Popen(
                ["nice", "-n", "19", *argv],
                cwd=SCRATCH,
                env=env or self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return "timeout", time.monotonic() - started
        return ("ok" if rc == 0 else "fail"), time.monotonic() - started

    def stages(self, module: str) -> list[tuple[str, str, list[str]]]:
        """The oracle, in order: (stage, key, command); a stage catches when a command of it
        fails. The key names the command's baseline time and timeout."""
        nextest = ["cargo", "nextest", "--config-file", str(NEXTEST_CONFIG), "run", "--fail-fast"]
        nextest += ["--test-threads", str(self.a.test_threads)]
        out = [
            ("unit", "unit", nextest + ["-p", "avout"]),
            # Core's doc examples are tests too (some are the only check of a public
            # contract), and nextest cannot run them.
            ("unit", "doc", ["cargo", "test", "--doc", "-p", "avout"]),
            ("model", "model", nextest + ["-p", "avout-models"]),
        ]
        for scenario, protocol in harness.soaks_of(module):
            soak = [str(TARGET / "release" / "avout"), "soak", "--scenarios", scenario]
            soak += ["--protocol", protocol, "--seeds", str(self.a.seeds)]
            soak += ["--base", str(self.a.base), "--threads", "1"]
            soak += ["--out", str(self.logs / "cases")]
            out.append(("soak", f"soak:{scenario}:{protocol}", soak))
        return out

    def build(self, name: str, release: bool) -> str:
        """Build what the next stages run: the tests (debug), or the CLI (release, only for
        a mutant the tests let through); "ok", "fail" (unviable) or "timeout"."""
        argv = ["cargo", "nextest", "run", "--no-run", "-p", "avout", "-p", "avout-models"]
        env = None
        if release:
            argv = ["cargo", "build", "--release", "-p", "avout-cli"]
            # A survivor's release build took 210-400 s of its ~500 s, and its soaks 2 s:
            # optimised less and built incrementally, the build is what shrinks. The
            # simulation draws nothing from the build, so a soak's verdict is the same.
            env = dict(self.env, **SOAK_BUILD_PROFILE)
        verdict, _ = self.sh(
            argv, self.a.build_timeout, f"{name}.build-{int(release)}.log", env
        )
        return verdict

    def read_log(self, name: str, key: str) -> str:
        return (self.logs / f"{name}.{harness.slug(key)}.log").read_text(errors="replace")

    def oracle(
        self, module: str, name: str, timeouts: dict, only: set | None = None
    ) -> tuple[str, dict]:
        """Run the stages in order (only the commands keyed in `only`, if given); the first
        command that fails catches."""
        seconds: dict[str, float] = {}
        for stage, key, argv in self.stages(module):
            if only is not None and key not in only:
                continue
            if key.startswith("soak") and "build-release" not in seconds:
                started = time.monotonic()
                built = self.build(name, release=True)
                seconds["build-release"] = round(time.monotonic() - started, 1)
                if built != "ok":
                    outcome = "unviable" if built == "fail" else "timeout"
                    return outcome, {"stage": "build", "seconds": seconds}
            verdict, took = self.sh(argv, timeouts.get(key), f"{name}.{harness.slug(key)}.log")
            seconds[key] = round(took, 1)
            if verdict == "fail" and harness.nextest_timed_out(self.read_log(name, key)):
                verdict = "timeout"
            if verdict == "timeout":
                return "timeout", {"stage": stage, "by": key, "seconds": seconds}
            if verdict == "fail":
                return stage, {"stage": stage, "by": key, "seconds": seconds}
        return "missed", {"seconds": seconds}


def cmd_run(a: argparse.Namespace) -> int:
    doc = json.loads(SAMPLE.read_text())
    shard = harness.parse_shard(a.shard)
    done = harness.load_results(RESULTS)
    todo = harness.pending(doc["mutants"], done, shard)
    runner = Runner(a, doc["commit"])
    runner.sample_files = doc["mutants"]
    runner.prepare()
    until = harness.parse_until(a.until, datetime.datetime.now(datetime.timezone.utc))
    log(f"{len(todo)} of {len(doc['mutants'])} to run in shard {a.shard}; {len(done)} done")

    baseline = done.get(harness.BASELINE)
    if baseline is None:
        log("baseline: the unmutated tree must build and pass every stage")
        if runner.build("baseline", release=False) != "ok":
            log("baseline does not build")
            return 2
        verdict, info = runner.oracle("all", "baseline", {})
        if verdict != "missed":
            log(f"baseline failed at {verdict}: see {a.logs}/baseline.*")
            return 2
        baseline = {"name": harness.BASELINE, "outcome": "baseline", **info}
        harness.append_result(RESULTS, baseline)
    # A stage added since the baseline was taken is measured on the unmutated tree now.
    missing = {key for _, key, _ in runner.stages("all")} - set(baseline["seconds"])
    if missing:
        log(f"baseline of the new commands {sorted(missing)}")
        verdict, info = runner.oracle("all", "baseline", {}, only=missing)
        if verdict != "missed":
            log(f"baseline failed at {verdict}: see {a.logs}/baseline.*")
            return 2
        baseline = dict(baseline, seconds={**baseline["seconds"], **info["seconds"]})
        harness.append_result(RESULTS, baseline)
    timeouts = harness.timeouts(baseline["seconds"], a.timeout_factor, a.timeout_floor)
    log(f"timeouts per stage: {timeouts}")

    for m in todo:
        if until is not None and datetime.datetime.now(datetime.timezone.utc) >= until:
            log(f"stopping at --until {a.until}; rerun to resume")
            break
        name, path = m["name"], SCRATCH / m["file"]
        slug = harness.slug(name)
        original = path.read_text()
        started = time.monotonic()
        try:
            path.write_text(harness.apply(original, m))
            built = runner.build(slug, release=False)
            if built == "ok":
                outcome, info = runner.oracle(m["module"], slug, timeouts)
            else:
                outcome, info = ("unviable" if built == "fail" else "timeout"), {"stage": "build"}
        finally:
            path.write_text(original)
        result = {
            "name": name,
            "file": m["file"],
            "module": m["module"],
            "outcome": outcome,
            "total_seconds": round(time.monotonic() - started, 1),
            **info,
        }
        harness.append_result(RESULTS, result)
        log(f"{outcome:8} {result['total_seconds']:7.1f}s {name}")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    doc = json.loads(SAMPLE.read_text())
    results = harness.load_results(RESULTS)
    triage = json.loads(TRIAGE.read_text()) if TRIAGE.exists() else {}
    REPORT.write_text(report.render(doc, results, triage))
    log(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample", help="draw the seeded sample into reports/mutation/sample.json")
    s.add_argument("--seed", type=int, default=37)
    s.add_argument("--count", type=int, default=400)
    s.add_argument("--commit", default="HEAD", help="the tree the mutants are listed from")
    s.set_defaults(func=cmd_sample)
    r = sub.add_parser("run", help="run the sample's pending mutants, appending to results.jsonl")
    r.add_argument("--shard", default="0/1", help="I/N: the mutants whose index mod N is I")
    r.add_argument("--until", help="HH:MM (UTC): start no mutant after this time")
    r.add_argument("--seeds", type=int, default=500, help="soak seeds per scenario")
    r.add_argument("--base", type=int, default=37_000_000, help="the soak's first seed")
    r.add_argument("--jobs", type=int, default=1, help="cargo build jobs")
    r.add_argument("--test-threads", type=int, default=1)
    r.add_argument("--timeout-factor", type=float, default=3.0)
    r.add_argument("--timeout-floor", type=float, default=60.0)
    r.add_argument("--build-timeout", type=float, default=3600.0)
    r.add_argument("--logs", default=str(TARGET / "logs"))
    r.set_defaults(func=cmd_run)
    g = sub.add_parser("report", help="write reports/mutation.md from the results")
    g.set_defaults(func=cmd_report)
    a = p.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
