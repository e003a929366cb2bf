"""The runner, the results document and the comparison, through the scripted FakeTarget:
no engine needed, so these run in milliseconds (behaviour against real engines is in
test_run_cli.py)."""

from __future__ import annotations

import itertools
import random

import pytest

from chbench.compare import build_comparison
from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_SERVER_LOST, QueryError, ServerLost
from chbench.plan import Plan, SidePlan
from chbench.results import RunDocument, open_results
from chbench.runner import run_plan
from chbench.targets.fake import Call, FakeTarget
from chbench.ui.progress import Progress
from chbench.workload import Query, Workload, parse_workload


def _plan(*sides: tuple[FakeTarget, Workload, dict[str, str]], **kw: object) -> Plan:
    plan = Plan(sides=[SidePlan(chr(ord("A") + i), t, w, s) for i, (t, w, s) in enumerate(sides)],
                **{"warmup": 0, "iterations": 4, "calibration": False, **kw})  # type: ignore[arg-type]
    return plan


def _workload(*names: str) -> Workload:
    return Workload(queries=[Query(n, f"SELECT '{n}'") for n in names], source="test")


def test_side_by_side_alternates_and_the_file_reads_back(tmp_path):
    target = FakeTarget(lambda call: 100.0 if call.settings.get("max_threads") == "1" else 50.0)
    out = tmp_path / "r.json"
    plan = _plan((target, _workload("q1", "q2"), {}), (target, _workload("q1", "q2"), {"max_threads": "1"}))
    outcome = run_plan(plan, str(out), Progress())
    assert outcome.exit_code == EXIT_OK
    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and doc.status == "complete" and doc.meta.ended_at
    q1 = doc.queries[0]
    assert [s.target for s in q1.measured("A") + q1.measured("B")] == ["A"] * 4 + ["B"] * 4
    assert [s.target for s in q1.samples] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert {s.client_ms for s in q1.measured("B")} == {100.0}
    assert doc.targets[1].settings_sent["max_threads"] == "1" and doc.targets[0].settings_sent["readonly"] == "2"
    # the typed document writes back exactly what it read
    assert RunDocument.from_json(doc.to_json(), "x").to_json() == doc.to_json()


def test_adaptive_stop_precise_queries_stop_early():
    rng = random.Random(1)
    target = FakeTarget(lambda call: 100.0 * (1 + (0.001 if "steady" in call.sql else 0.3) * rng.random()))
    outcome = run_plan(_plan((target, _workload("steady", "noisy"), {}), iterations=None, max_time_per_query=2.0),
                       None, Progress())
    runs = {q.name: len(q.measured("A")) for q in outcome.doc.queries}
    assert runs["steady"] == 5  # the median's interval is within ±2% at the minimum number of runs
    assert runs["noisy"] > runs["steady"]


def test_setup_teardown_once_per_side_writes_allowed_and_per_query_settings(tmp_path):
    target = FakeTarget(lambda call: 10.0)
    wl = parse_workload("-- setup\nCREATE TABLE t (x UInt8) ENGINE = Memory;\n"
                        "-- name: q\n-- settings: max_threads=1, not_a_setting=3\nSELECT count() FROM t;\n"
                        "-- teardown\nDROP TABLE t\n")
    outcome = run_plan(_plan((target, wl, {}), (target, wl, {"max_threads": "2"})), str(tmp_path / "s.json"),
                       Progress())
    statements = target.executed("statement")
    assert [c.sql for c in statements] == ["CREATE TABLE t (x UInt8) ENGINE = Memory", "DROP TABLE t"]
    assert all("readonly" not in c.settings for c in statements)  # writes allowed in set-up and tear-down
    queries = target.executed()
    assert queries and all(c.settings["max_threads"] == "1" and c.settings["readonly"] == "2" for c in queries)
    assert all("not_a_setting" not in c.settings for c in queries)
    entry = outcome.doc.queries[0].sides["A"]
    assert entry["settings"] == {"max_threads": "1", "not_a_setting": "3"}
    assert entry["unsupported_settings"] == ["not_a_setting"]
    assert outcome.doc.targets[0].extra["workload"]["setup"] == ["CREATE TABLE t (x UInt8) ENGINE = Memory"]


def test_a_failing_setup_fails_its_side_only(tmp_path):
    def handler(call: Call) -> float:
        if call.what == "statement" and "broken" in call.sql:
            raise QueryError(62, "Syntax error")
        return 20.0

    a, b = FakeTarget(handler), FakeTarget(handler)
    good = _workload("q")
    bad = Workload(queries=good.queries, setup=["CREATE broken"], teardown=["DROP TABLE t"])
    out = tmp_path / "f.json"
    outcome = run_plan(_plan((a, good, {}), (b, bad, {})), str(out), Progress())
    assert outcome.exit_code == EXIT_FINDING and "side B: set-up failed" in (outcome.message or "")
    assert not b.executed() and a.executed()
    assert [c.sql for c in b.executed("statement")] == ["CREATE broken", "DROP TABLE t"]  # tear-down still runs
    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and doc.targets[1].extra["setup_error"]["error"]["code"] == 62
    cmp = build_comparison([str(out)])
    assert cmp.doc["queries"][0]["verdict"] == "fails on B only"


@pytest.mark.parametrize("stop,status,code", [(KeyboardInterrupt, "interrupted", EXIT_INTERRUPTED),
                                               (ServerLost, "server_lost", EXIT_SERVER_LOST)])
def test_a_stop_keeps_every_sample_and_finishes_the_file(tmp_path, stop, status, code):
    counter = itertools.count()

    def handler(call: Call) -> float:
        if next(counter) == 5:
            raise stop("the server stopped answering") if stop is ServerLost else stop()
        return 30.0

    out = tmp_path / "stop.json"
    target = FakeTarget(handler)
    outcome = run_plan(_plan((target, Workload(_workload("q").queries, teardown=["DROP TABLE t"]), {}),
                             iterations=50), str(out), Progress())
    assert outcome.exit_code == code
    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and doc.status == status and doc.meta.ended_at
    assert len(doc.queries[0].measured("A")) == 5
    assert target.executed("statement")  # tear-down ran anyway


def test_failed_queries_are_samples_and_the_run_goes_on():
    def handler(call: Call) -> float:
        if "bad" in call.sql:
            raise QueryError(46, "Unknown function")
        return 5.0

    target = FakeTarget(handler)
    outcome = run_plan(_plan((target, _workload("bad", "good"), {})), None, Progress())
    assert outcome.exit_code == EXIT_FINDING and "bad" in (outcome.message or "")
    bad, good = outcome.doc.queries
    assert bad.errors >= 2 and all(s.error and s.error["code"] == 46 for s in bad.samples)
    assert good.errors == 0 and len(good.measured("A")) == 4


def test_comparison_of_two_scripted_runs(tmp_path):
    """A known 20% shift is slower; the same noise twice is no change."""
    def runs(factor: float, seed: int) -> str:
        rng = random.Random(seed)
        target = FakeTarget(lambda call: 100.0 * factor * (1 + 0.02 * rng.gauss(0, 1)))
        out = tmp_path / f"{factor}-{seed}.json"
        run_plan(_plan((target, _workload("q1", "q2", "q3"), {}), iterations=20), str(out), Progress())
        return str(out)

    base, same, slower = runs(1.0, 1), runs(1.0, 2), runs(1.2, 3)
    verdicts = {r["verdict"] for r in build_comparison([base, slower]).doc["queries"]}
    assert verdicts == {"slower"}
    assert all(r["verdict"] in ("no change", "unstable") for r in build_comparison([base, same]).doc["queries"])
