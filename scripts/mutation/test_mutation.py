"""Tests of the mutation harness's own logic: `python3 -m unittest discover scripts/mutation`."""

from __future__ import annotations

import datetime
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import report  # noqa: E402


def mutant(name: str, file: str, line: int = 1, replacement: str = "true") -> dict:
    span = {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 5}}
    return {"name": name, "file": file, "genre": "FnValue", "span": span, "replacement": replacement}


SRC = "\n".join(f"fn{i} ok" for i in range(1, 40))
FILES = [
    "core/src/lock/mutex.rs",
    "core/src/stm/mvcc/commit.rs",
    "core/src/stm/tx.rs",
    "core/src/zk/mod.rs",
    "core/src/lock/loom_tests.rs",
    "core/src/stm/store/memory.rs",
]
LIST = [mutant(f"{f}:{i}:1: m{i}", f, i) for f in FILES for i in range(1, 30)]
SOURCES = {f: SRC for f in FILES}


class Modules(unittest.TestCase):
    def test_longest_prefix_wins(self):
        self.assertEqual(harness.module_of("core/src/stm/mvcc/commit.rs"), "stm-mvcc")
        self.assertEqual(harness.module_of("core/src/stm/optimistic/read.rs"), "stm-optimistic")
        self.assertEqual(harness.module_of("core/src/stm/tx.rs"), "stm")
        self.assertEqual(harness.module_of("core/src/recipes/double_barrier/leave.rs"), "double-barrier")
        self.assertEqual(harness.module_of("core/src/recipes/barrier/mod.rs"), "barrier")

    def test_tests_stores_and_other_code_are_left_out(self):
        for f in [
            "core/src/lock/loom_tests.rs",
            "core/src/agent/step_tests.rs",
            "core/src/recipes/queue/tests.rs",
            "core/src/machine/testing.rs",
            "core/src/stm/store/postgres.rs",
            "core/src/zk/mod.rs",
            "core/src/recipes/cache/view.rs",
        ]:
            self.assertIsNone(harness.module_of(f), f)

    def test_soaks(self):
        self.assertEqual(harness.soaks_of("semaphore"), [("semaphore", "mvcc")])
        everything = harness.soaks_of("all")
        self.assertEqual(len(everything), len(set(everything)))
        for name, _, soaks in harness.MODULES:
            self.assertTrue(set(soaks) <= set(everything), name)
        with self.assertRaises(ValueError):
            harness.soaks_of("nope")


class Sampling(unittest.TestCase):
    def test_splitmix64_reference_output(self):
        # The first outputs of SplitMix64 from state 0 (Vigna's reference implementation).
        state, a = harness.splitmix64(0)
        _, b = harness.splitmix64(state)
        self.assertEqual(a, 0xE220A8397B1DCDAF)
        self.assertEqual(b, 0x6E789E6AA1B965F4)

    def test_shuffle_is_a_permutation_fixed_by_its_seed(self):
        items = list(range(100))
        a = harness.shuffled(items, 7)
        self.assertEqual(sorted(a), items)
        self.assertEqual(a, harness.shuffled(items, 7))
        self.assertNotEqual(a, harness.shuffled(items, 8))
        self.assertNotEqual(a, items)

    def test_same_seed_same_sample_whatever_the_list_order(self):
        a = harness.draw_sample(LIST, SOURCES, 37, 20)
        b = harness.draw_sample(list(reversed(LIST)), SOURCES, 37, 20)
        self.assertEqual(a, b)
        self.assertEqual(len(a), 20)
        self.assertEqual(len({m["name"] for m in a}), 20)
        self.assertNotEqual(a, harness.draw_sample(LIST, SOURCES, 38, 20))

    def test_sample_holds_only_protocol_code(self):
        whole = harness.draw_sample(LIST, SOURCES, 1, 1000)
        self.assertEqual(len(whole), 3 * 29)
        self.assertEqual({m["module"] for m in whole}, {"lock", "stm-mvcc", "stm"})

    def test_population(self):
        self.assertEqual(harness.population_by_module(LIST), {"lock": 29, "stm": 29, "stm-mvcc": 29})

    def test_sample_file_round_trips(self):
        doc = {"commit": "c", "seed": 1, "count": 3, "population": {"lock": 29}}
        doc["mutants"] = harness.draw_sample(LIST, SOURCES, 1, 3)
        text = harness.dump_sample(doc)
        self.assertEqual(json.loads(text), doc)
        self.assertEqual(len(text.splitlines()), 5)


class Applying(unittest.TestCase):
    # A mutant as cargo-mutants lists it, and the line its diff shows after the change.
    SOURCE = "impl X {\n    fn apply(&self) -> u8 {\n        self.a + self.b\n    }\n}\n"
    REAL = {
        "name": "x.rs:3:16: replace + with - in X::apply",
        "span": {"start": {"line": 3, "column": 16}, "end": {"line": 3, "column": 17}},
        "replacement": "-",
    }

    def test_replaces_the_span_as_cargo_mutants_does(self):
        m = dict(self.REAL, original=harness.digest("+"))
        out = harness.apply(self.SOURCE, m).split("\n")
        self.assertEqual(out[2], "        self.a - /* ~ changed by cargo-mutants ~ */ self.b")
        self.assertEqual(out[:2] + out[3:], self.SOURCE.split("\n")[:2] + self.SOURCE.split("\n")[3:])

    def test_multi_line_span(self):
        span = {"start": {"line": 2, "column": 27}, "end": {"line": 4, "column": 6}}
        text = harness.span_text(self.SOURCE, span)
        self.assertEqual(text, "{\n        self.a + self.b\n    }")
        m = {"name": "n", "span": span, "replacement": "{ 0 }", "original": harness.digest(text)}
        out = harness.apply(self.SOURCE, m)
        self.assertEqual(out, "impl X {\n    fn apply(&self) -> u8 { 0 }" + harness.MARK + "\n}\n")

    def test_refuses_a_changed_source(self):
        m = dict(self.REAL, original=harness.digest("*"))
        with self.assertRaises(ValueError):
            harness.apply(self.SOURCE, m)


class Resuming(unittest.TestCase):
    def test_shards_partition_the_sample(self):
        sample = [{"name": str(i)} for i in range(23)]
        seen = []
        for i in range(4):
            seen += [m["name"] for m in harness.pending(sample, {}, (i, 4))]
        self.assertEqual(sorted(seen, key=int), [str(i) for i in range(23)])
        self.assertEqual(len(harness.pending(sample, {}, (1, 4))), 6)

    def test_parse_shard(self):
        self.assertEqual(harness.parse_shard("2/5"), (2, 5))
        for bad in ["5/5", "1", "-1/3", "a/b", "1/0"]:
            with self.assertRaises(ValueError):
                harness.parse_shard(bad)

    def test_done_mutants_are_skipped_and_a_torn_line_is_run_again(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "results.jsonl"
            harness.append_result(path, {"name": "a", "outcome": "unit"})
            harness.append_result(path, {"name": "b", "outcome": "missed"})
            with open(path, "a") as f:
                f.write('{"name": "c", "outc')
            done = harness.load_results(path)
            self.assertEqual(set(done), {"a", "b"})
            sample = [{"name": n} for n in "abcd"]
            self.assertEqual([m["name"] for m in harness.pending(sample, done, (0, 1))], ["c", "d"])
            self.assertEqual([m["name"] for m in harness.pending(sample, done, (1, 2))], ["d"])

    def test_the_last_result_of_a_mutant_wins(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "results.jsonl"
            harness.append_result(path, {"name": "a", "outcome": "timeout"})
            harness.append_result(path, {"name": "a", "outcome": "unit"})
            self.assertEqual(harness.load_results(path)["a"]["outcome"], "unit")

    def test_timeouts(self):
        t = harness.timeouts({"unit": 100.0, "soak:x:mvcc": 10.0}, 3.0, 60.0)
        self.assertEqual(t, {"unit": 300.0, "soak:x:mvcc": 70.0})

    def test_a_test_killed_by_nextest_is_a_timeout(self):
        log = "        PASS [   0.1s] (1/2) a\n     TIMEOUT [ 120.002s] (2/2) avout::it acl::b\n"
        self.assertTrue(harness.nextest_timed_out(log))
        self.assertFalse(harness.nextest_timed_out("        FAIL [   0.1s] (1/2) a timeout_test\n"))
        self.assertFalse(harness.nextest_timed_out("        SLOW [> 60.000s] (───────) a\n"))

    def test_until(self):
        now = datetime.datetime(2026, 11, 29, 16, 0, tzinfo=datetime.timezone.utc)
        self.assertEqual(harness.parse_until("17:25", now), now.replace(hour=17, minute=25))
        self.assertLess(harness.parse_until("15:00", now), now)
        self.assertIsNone(harness.parse_until(None, now))
        # Past midnight: the next one, when it is near.
        late = datetime.datetime(2026, 11, 29, 23, 55, tzinfo=datetime.timezone.utc)
        self.assertEqual(
            harness.parse_until("00:33", late),
            datetime.datetime(2026, 11, 30, 0, 33, tzinfo=datetime.timezone.utc),
        )
        self.assertLess(harness.parse_until("23:00", late), late)


class Reporting(unittest.TestCase):
    def test_wilson_reference_values(self):
        lo, hi = report.wilson(8, 10)
        self.assertAlmostEqual(lo, 0.4902, places=4)
        self.assertAlmostEqual(hi, 0.9433, places=4)
        self.assertEqual(report.wilson(0, 10)[0], 0.0)
        self.assertAlmostEqual(report.wilson(0, 10)[1], 0.2775, places=4)
        self.assertAlmostEqual(report.wilson(10, 10)[0], 0.7225, places=4)
        self.assertEqual(report.wilson(0, 0), (0.0, 1.0))

    def results(self):
        outcomes = ["unit", "unit", "model", "soak", "timeout", "missed", "missed", "unviable"]
        return [
            {"name": f"m{i}", "module": "lock", "outcome": o, "total_seconds": 10.0 * (i + 1)}
            for i, o in enumerate(outcomes)
        ]

    def test_tally(self):
        triage = {"m5": {"verdict": "equivalent", "why": "same value"}}
        t = report.tally(self.results(), triage)
        self.assertEqual((t["tried"], t["caught"], t["missed"], t["unviable"]), (8, 5, 2, 1))
        self.assertEqual((t["equivalent"], t["blind"], t["untriaged"]), (1, 0, 1))
        self.assertEqual(t["scored"], 6)
        triage["m6"] = {"verdict": "test-code", "why": "a loom helper"}
        t = report.tally(self.results(), triage)
        self.assertEqual((t["equivalent"], t["test_code"], t["blind"], t["untriaged"]), (1, 1, 0, 0))
        self.assertEqual(t["scored"], 5)

    def test_render(self):
        sample = [{"name": f"m{i}", "module": "lock"} for i in range(10)]
        doc = {"commit": "f" * 40, "seed": 37, "count": 10, "population": {"lock": 99}, "mutants": sample}
        results = {r["name"]: r for r in self.results()}
        results["elsewhere"] = {"name": "elsewhere", "module": "lock", "outcome": "unit", "total_seconds": 1.0}
        results[harness.BASELINE] = {
            "name": harness.BASELINE,
            "outcome": "baseline",
            "seconds": {"unit": 250.4, "model": 64.0, "soak:a:mvcc": 1.5, "soak:b:mvcc": 2.0},
        }
        triage = {"m5": {"verdict": "equivalent", "why": "a | b"}, "m6": {"verdict": "blind-spot", "why": "w"}}
        md = report.render(doc, results, triage)
        self.assertNotIn("blind spots closed since", md)
        triage["m6"]["closed_by"] = "tests/it/x.rs the_test"
        closed = report.render(doc, results, triage)
        self.assertIn("With the 1 blind spots closed since by new tests", closed)
        self.assertIn("**100.0% [61.0%, 100.0%]**", closed)
        self.assertIn("**8 of 10 sampled mutants run**", md)
        self.assertIn("| lock | 99 | 10 | 8 | 2 | 1 | 1 | 1 | 2 (1 / 0 / 1 / 0) | 1 | 83.3% [43.6%, 97.0%] |", md)
        self.assertIn("`m5` | equivalent | a \\| b |", md)
        self.assertIn("mean 45 s, median 50 s, total 0.10 h; the 2 left need about 0.0 h", md)
        self.assertIn("Results not in the sample (ignored): 1.", md)
        self.assertIn("unit 250 s, model 64 s, every soak 4 s together", md)
        self.assertTrue(md.startswith("# Mutation score"))
        self.assertIn(report.COMMAND, md)


if __name__ == "__main__":
    unittest.main()
