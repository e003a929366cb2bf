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
                # scripted times owe nothing to the machine: no round is set aside because the
                # machine is busy (another test's server) unless a test asks for it
                **{"warmup": 0, "iterations": 4, "calibration": False, "quiet_wait": 0.0,
                   **kw})  # type: ignore[arg-type]
    return plan


def _workload(*names: str) -> Workload:
    return Workload(queries=[Query(n, f"SELECT '{n}'") for n in names], source="test")


def test_a_setting_no_server_knows_is_an_error_and_one_some_know_is_a_note(tmp_path):
    """`--setting-b max_thread=1` (a typo) was left out in silence: the run measured an A/A
    and compare said "no change". Unknown to every side it is a one-line error before
    anything runs; unknown to one side only (a newer setting) it is left out there, said."""
    from chbench.errors import UsageError

    target = FakeTarget(lambda call: 10.0)
    out = tmp_path / "r.json"
    with pytest.raises(UsageError, match=r"unknown setting max_thread \(not in system.settings of ClickHouse "
                                         r"26.9.0.0\); did you mean max_threads"):
        run_plan(_plan((target, _workload("q"), {}), (target, _workload("q"), {"max_thread": "1"})), str(out),
                 Progress())
    assert not out.exists() and not target.calls
    old = FakeTarget(lambda call: 10.0, version="24.8.0.0",
                     settings={"readonly": "0", "use_query_cache": "0", "max_threads": "2"})
    new = FakeTarget(lambda call: 10.0, settings={**old.settings, "enable_lazy_columns_replication": "0"})
    wanted = {"enable_lazy_columns_replication": "1"}
    outcome = run_plan(_plan((old, _workload("q"), dict(wanted)), (new, _workload("q"), dict(wanted))), str(out),
                       Progress())
    assert outcome.exit_code == EXIT_OK
    assert outcome.doc.meta.extra["notes"][-1] == \
        "setting enable_lazy_columns_replication is not known to ClickHouse 24.8.0.0 (side A): not sent there"
    assert all("enable_lazy_columns_replication" not in c.settings for c in old.calls)
    assert any(c.settings.get("enable_lazy_columns_replication") == "1" for c in new.calls)


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


@pytest.mark.parametrize(("version", "sent"), [("26.9.0.0", "0.2"), ("22.6.1.1", "0.2"), ("18.16.1", "1")])
def test_a_timeout_under_a_second_is_sent_as_it_is_where_the_server_reads_fractions(version, sent):
    """``--timeout 0.2`` went out as max_execution_time=1 (rounded, at least 1): on the
    embedded engine, which cannot stop a query from outside, ``SELECT sleep(0.5)`` was a
    510 ms success. ClickHouse reads fractional seconds since 22.6; before, 0.2 read as 0
    (no limit), so older servers get whole seconds rounded up."""
    target = FakeTarget(lambda call: 1.0, version=version)
    run_plan(_plan((target, _workload("q"), {}), timeout=0.2, iterations=1), None, Progress())
    assert {c.settings["max_execution_time"] for c in target.executed()} == {sent}
    from chbench.targets import time_limit

    # no exponent, never 0 (no limit at all): 1e-05 went out as "1e-05"
    assert [time_limit(v, (26, 9)) for v in (1e-5, 1e7, 1.25)] == ["0.001", "10000000", "1.25"]


def test_the_calibration_query_runs_without_the_configuration_under_test(tmp_path):
    """The machine's witness: a --setting (or --max-threads) the user is testing must not
    move it, or history and compare call the setting's effect the machine."""
    target = FakeTarget(lambda call: 100.0 if call.settings.get("max_threads") == "1" else 50.0)
    wl = Workload(queries=[Query("q", "SELECT 1")], source="test", settings={"max_bytes_to_read": "10"})
    outcome = run_plan(_plan((target, wl, {"max_threads": "1"}), calibration=True, max_threads=2), None, Progress())
    cal = outcome.doc.calibration[0]
    assert cal.settings is not None and {"max_threads", "max_bytes_to_read"}.isdisjoint(cal.settings)
    assert cal.settings["readonly"] == "2" and cal.settings["use_query_cache"] == "0"
    sent = [c.settings for c in target.executed() if c.sql.startswith(cal.sql)]
    assert sent and all(s == cal.settings for s in sent) and {s.client_ms for s in cal.samples} == {50.0}
    assert outcome.doc.targets[0].settings_sent["max_threads"] == "1"
    assert RunDocument.from_json(outcome.doc.to_json(), "x").calibration[0].settings == cal.settings


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
    assert entry.settings == {"max_threads": "1", "not_a_setting": "3"}
    assert entry.unsupported_settings == ["not_a_setting"]
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
    assert cmp.doc.queries[0].verdict == "fails on B only"
    assert cmp.doc.queries[0].reasons == ["B: set-up failed: Code 62: Syntax error"]


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
    from chbench.report.run import error_lines, server_message

    # the run's report shows the server's reason, not its prefix, and says where it cut
    assert server_message("Code: 60. DB::Exception: Table default.t does not exist. (UNKNOWN_TABLE)") == \
        "Table default.t does not exist. (UNKNOWN_TABLE)"
    assert server_message("Code: 115, e.displayText() = DB::Exception: Unknown setting x, e.what() = "
                          "DB::Exception") == "Unknown setting x"  # 18.16's form
    assert server_message("x" * 80) == "x" * 59 + "…"
    assert [t.text for t in error_lines(outcome.doc)] == \
        [f"bad on A: {bad.errors} errors, the first: Unknown function"]


def test_comparison_of_two_scripted_runs(tmp_path):
    """One query of five 20% slower is `slower`; the same noise twice is no change. All
    three 20% slower together is the machine's level or the engine's, not told apart:
    these files hold no probes, and three queries show no shift all share."""
    def runs(factor: float, seed: int, names: tuple[str, ...] = ("s1", "q2", "q3", "q4", "q5")) -> str:
        rng = random.Random(seed)  # the queries named s… take `factor` times as long
        target = FakeTarget(lambda call: 100.0 * (factor if "'s" in call.sql else 1.0) * (1 + 0.02 * rng.gauss(0, 1)))
        out = tmp_path / f"{factor}-{seed}-{len(names)}.json"
        # scripted times owe nothing to the machine: no probes, whose reading of whatever else
        # the machine does would make one run "busier" and rightly qualify its verdicts
        run_plan(_plan((target, _workload(*names), {}), iterations=20, probes=False), str(out), Progress())
        return str(out)

    base, same, slower = runs(1.0, 1), runs(1.0, 2), runs(1.2, 3)
    verdicts = {r.name: r.verdict for r in build_comparison([base, slower]).doc.queries}
    assert verdicts["s1"] == "slower" and "slower" not in [v for n, v in verdicts.items() if n != "s1"]
    assert all(r.verdict in ("no change", "unstable") for r in build_comparison([base, same]).doc.queries)
    three = ("s1", "s2", "s3")  # every query slower
    together = build_comparison([runs(1.0, 4, three), runs(1.2, 5, three)]).doc
    assert [r.verdict for r in together.queries] == ["unstable"] * 3
    assert all(r.vs_one is not None and r.vs_one.verdict == "slower" for r in together.queries)
    assert any("between files that hold nothing of the machine" in f for f in together.findings)


# -- issue 24: paired adaptive stopping, probes that do not disturb, rounds set aside ------------
def test_side_by_side_stops_on_the_paired_interval():
    """Each round's noise is shared by A and B (the machine's drift): each side alone is
    far from ±2%, their per-round ratio is exact — the run stops at the minimum."""
    rng = random.Random(2)
    noise = [1 + 0.3 * rng.random() for _ in range(1000)]
    calls = itertools.count()
    target = FakeTarget(lambda call: 100.0 * noise[next(calls) // 2])
    outcome = run_plan(_plan((target, _workload("q"), {}), (target, _workload("q"), {"max_threads": "1"}),
                             iterations=None, max_time_per_query=5.0, probes=False), None, Progress())
    q = outcome.doc.queries[0]
    # the first 95% signed-rank interval needs 6 pairs (with 5, even T = 0 has p = 1/32)
    assert len(q.measured("A")) == len(q.measured("B")) == 6


def _probe_log(monkeypatch: pytest.MonkeyPatch, target: FakeTarget, busy: list[float]) -> None:
    """Machine readings every round, logged among the target's calls; ``busy``: the
    share of the CPUs other processes use in each successive reading."""
    from chbench.machine import recorder as rec
    from chbench.runner import runner

    monkeypatch.setattr(runner, "PROBES_EVERY_S", 0.0)
    readings = iter(busy)

    def read(self: object, round_no: int, session: int = 0) -> None:
        share = next(readings, 0.0)
        target.calls.append(Call("probe", f"after round {round_no}"))
        self.into["client"].append({"round": round_no, "session": session, "others_cores": 2 * share,  # type: ignore[attr-defined]
                                    "cpus": 2})

    monkeypatch.setattr(rec.MachineRecorder, "read", read)
    monkeypatch.setattr(rec, "BusyTimeline", lambda pids: FakeTimeline([], available=False))


class FakeTimeline:
    """The CPU timeline (chbench/machine/timeline.py) as a list: the cores other
    processes used around each successive sample judged (then 0)."""

    def __init__(self, cores: list[float], available: bool = True) -> None:
        self.cores = iter(cores)
        self.available = available
        self.cpus = 2
        self.note: str | None = None
        self.judged = 0

    def refresh(self) -> None:
        pass

    def covers(self, t: float) -> bool:
        return True

    def others(self, start: float, end: float) -> float | None:
        self.judged += 1
        return next(self.cores, 0.0)

    def close(self) -> None:
        pass


def test_probes_only_between_rounds_each_followed_by_a_wake_up(monkeypatch):
    target = FakeTarget(lambda call: 1.0)
    _probe_log(monkeypatch, target, [])
    plan = _plan((target, _workload("q1", "q2", "q3"), {}), (target, _workload("q1", "q2", "q3"), {"max_threads": "1"}))
    run_plan(plan, None, Progress())
    kinds = ["probe" if c.what == "probe" else "wake" if "FORMAT Null" in c.sql and "SELECT 1" in c.sql
             else "query" for c in target.calls
             if c.what in ("execute", "probe") or (c.what == "admin" and "FORMAT Null" in c.sql)]
    text = "".join(k[0] for k in kinds)
    # every round is 3 queries x 2 sides, uninterrupted; a probe and a wake-up between rounds
    assert text == "pw".join(["q" * 6] * 4) + "p"


def test_probes_are_read_at_most_every_few_seconds():
    from chbench.runner import runner

    assert runner.PROBES_EVERY_S >= 2.0
    target = FakeTarget(lambda call: 1.0)
    outcome = run_plan(_plan((target, _workload("q1"), {}), iterations=50), None, Progress())
    assert len(outcome.doc.machine["client"]) == 1  # a run this short: one reading, at its end
    none = run_plan(_plan((target, _workload("q1"), {}), iterations=5, probes=False), None, Progress())
    assert "client" not in none.doc.machine


def test_busy_rounds_are_set_aside_and_measured_again(monkeypatch, tmp_path):
    target = FakeTarget(lambda call: 5.0)
    _probe_log(monkeypatch, target, [0.4, 0.3, 0.0, 0.0, 0.0, 0.0])
    out = tmp_path / "r.json"
    outcome = run_plan(_plan((target, _workload("q1", "q2"), {}), iterations=4, quiet_wait=60.0), str(out),
                       Progress())
    q = outcome.doc.queries[0]
    assert len(q.measured("A")) == 4 and sum(s.set_aside for s in q.samples) == 2
    assert [s.round for s in q.samples if s.set_aside] == [0, 1]
    record = outcome.doc.machine["set_aside"]
    assert [r["from_round"] for r in record["rounds"]] == [0, 1] and not record["never_quiet"]
    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and sum(s.set_aside for s in doc.queries[0].samples) == 2
    cmp = build_comparison([str(out), str(out)])
    assert cmp.doc.summary.set_aside is not None and cmp.doc.summary.set_aside["rounds"] == 4
    assert any("set aside" in f for f in cmp.doc.findings)
    assert cmp.doc.queries[0].a is not None and cmp.doc.queries[0].a.runs == 4
    from chbench.report.run import set_aside_lines

    assert "2 rounds set aside" in set_aside_lines(doc)[0].text


def test_a_machine_that_never_gets_quiet_is_measured_as_it_is(monkeypatch):
    target = FakeTarget(lambda call: 5.0)
    _probe_log(monkeypatch, target, [0.5] * 1_000_000)
    outcome = run_plan(_plan((target, _workload("q1"), {}), iterations=4, quiet_wait=0.05), None, Progress())
    record = outcome.doc.machine["set_aside"]
    assert record["never_quiet"] and record["spent_s"] >= 0.05  # the set-aside samples' slots
    assert len(outcome.doc.queries[0].measured("A")) == 4
    # side by side nothing is set aside: the pairs share the busy machine
    target2 = FakeTarget(lambda call: 5.0)
    _probe_log(monkeypatch, target2, [0.5] * 100)
    sbs = run_plan(_plan((target2, _workload("q1"), {}), (target2, _workload("q1"), {"max_threads": "1"})), None,
                   Progress())
    assert "set_aside" not in sbs.doc.machine


def test_samples_the_timeline_shows_busy_are_set_aside_one_by_one(monkeypatch, tmp_path):
    from chbench.machine import recorder as rec
    from chbench.runner import runner

    monkeypatch.setattr(runner, "PROBES_EVERY_S", 0.0)
    # q1's 1st and q2's 1st sample ran while another process used 1.5 of the 2 cores
    timeline = FakeTimeline([1.5, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    monkeypatch.setattr(rec, "BusyTimeline", lambda pids: timeline)
    out = tmp_path / "t.json"
    outcome = run_plan(_plan((FakeTarget(lambda call: 5.0), _workload("q1", "q2"), {}), iterations=3,
                             quiet_wait=60.0), str(out), Progress())
    record = outcome.doc.machine["set_aside"]
    assert record["by"] == "timeline" and record["samples"] == 2 and record["rounds"] == []
    for q in outcome.doc.queries:
        assert len(q.measured("A")) == 3  # the set-aside one measured again
        aside = [s for s in q.samples if s.set_aside]
        assert len(aside) == 1 and aside[0].round == 0 and aside[0].others_cores == 1.5
        assert all(s.others_cores == 0.0 for s in q.measured("A"))
    cmp = build_comparison([str(out), str(out)])
    assert cmp.doc.summary.set_aside is not None and cmp.doc.summary.set_aside["samples"] == 4
    assert any("4 runs set aside" in f for f in cmp.doc.findings)
    from chbench.report.run import set_aside_lines

    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and "2 runs set aside" in set_aside_lines(doc)[0].text


def test_a_run_whose_busy_moments_were_set_aside_is_still_the_busier_machine(monkeypatch, tmp_path):
    """B's busy moments were set aside, but its readings saw the neighbour: B is the
    busier machine (its quiet moments measured +3.5% and +4.7% against a quiet run's,
    docs/statistics.md), and the kept samples' share is kept next to the readings'."""
    from chbench.machine import recorder as rec

    files = []
    for name, busy in (("a", [0.0] * 10), ("b", [1.5] * 2)):
        _probe_log(monkeypatch, FakeTarget(lambda call: 5.0), [0.0] * 50 if name == "a" else [0.3] * 50)
        monkeypatch.setattr(rec, "BusyTimeline", lambda pids, busy=busy: FakeTimeline(busy))
        out = tmp_path / f"{name}.json"
        run_plan(_plan((FakeTarget(lambda call: 5.0), _workload("q1", "q2"), {}), iterations=4, quiet_wait=60.0),
                 str(out), Progress())
        files.append(str(out))
    cmp = build_comparison(files)
    assert cmp.doc.summary.set_aside is not None and cmp.doc.summary.set_aside["b"]["samples"] > 0
    probes = cmp.doc.summary.machine["probes"]
    assert probes["b"]["client"]["others_share"] == pytest.approx(0.3)
    assert probes["b"]["client"]["others_share_kept"] == 0.0
    assert cmp.doc.summary.machine["busier"] == "B"


def test_a_machine_that_never_gets_quiet_sample_by_sample(monkeypatch, tmp_path):
    from chbench.history.record import runs_from_file
    from chbench.machine import recorder as rec
    from chbench.report.run import set_aside_lines
    from chbench.runner import runner

    monkeypatch.setattr(runner, "PROBES_EVERY_S", 0.0)
    monkeypatch.setattr(rec, "BusyTimeline", lambda pids: FakeTimeline([1.0] * 1_000_000))
    out = tmp_path / "busy.json"
    outcome = run_plan(_plan((FakeTarget(lambda call: 5.0), _workload("q1"), {}), iterations=4, quiet_wait=0.02),
                       str(out), Progress())
    record = outcome.doc.machine["set_aside"]
    # each set-aside sample costs at least its own 5 ms: four of them reach 20 ms
    assert record["never_quiet"] and record["spent_s"] >= 0.02 and record["samples"] == 4
    q = outcome.doc.queries[0]
    assert len(q.measured("A")) == 4 and all(s.others_cores == 1.0 for s in q.samples if not s.warmup)
    # the verdicts take every run, those set aside before the budget ran out too: the machine
    # as it was for the whole run, not a quiet-looking selection of its first part
    assert outcome.doc.never_quiet and len(q.measured("A", set_aside=True)) == 8
    cmp = build_comparison([str(out), str(out)])
    assert cmp.doc.queries[0].a is not None and cmp.doc.queries[0].a.runs == 8
    assert any("8 runs set aside (A 4, B 4)" in f and f.endswith("in the verdicts (below)") for f in cmp.doc.findings)
    assert any("every run is judged, those set aside too" in f for f in cmp.doc.findings)
    assert len(runs_from_file(str(out), {})[0].queries[0].client_ms) == 8  # history keeps what compare judges
    doc = open_results(str(out))
    assert isinstance(doc, RunDocument) and "every run counts" in set_aside_lines(doc)[0].text


def test_too_few_rounds_for_a_side_by_side_verdict_is_said_first():
    t = FakeTarget(lambda call: 10.0)
    two = ((t, _workload("q"), {}), (t, _workload("q"), {"max_threads": "1"}))
    assert "5 rounds: a side-by-side speed verdict needs 6" in (_plan(*two, iterations=5).rounds_warning() or "")
    assert _plan(*two, iterations=3, sessions=2).rounds_warning() is None  # 6 rounds over two sessions
    assert _plan(*two, iterations=None).rounds_warning() is None  # adaptive: it runs until decided
    assert _plan(*two, iterations=2, more_to_come=True).rounds_warning() is None  # bisect adds rounds
    assert _plan(two[0], iterations=2).rounds_warning() is None  # one side: no verdict to reach
    assert _plan(*two, iterations=6).rounds_warning() is None  # one query: 2/2^6 < 0.05
    ten = _workload(*(f"q{i}" for i in range(10)))
    eight = _plan((t, ten, {}), (t, ten, {"max_threads": "1"}), iterations=8).rounds_warning() or ""
    assert "8 rounds: no query can be shown slower or faster" in eight and "takes 9 rounds" in eight
    assert _plan((t, ten, {}), (t, ten, {"max_threads": "1"}), iterations=9).rounds_warning() is None

    class Lines(Progress):
        def __init__(self) -> None:
            self.lines: list[str] = []

        def problem(self, line: str) -> None:
            self.lines.append(line)

    shown = Lines()
    run_plan(_plan(*two, iterations=2), None, shown)
    assert shown.lines[0].startswith("chbench: warning: 2 rounds")


# -- adaptive stopping that knows the threshold (stats/stopping.py) ----------------------------
def _scripted_ratio(ratio: float, wobble: float, seed: int) -> FakeTarget:
    """q: B = ``ratio`` × A × (1 ± ``wobble``) per round (the two runs of a round share
    the machine); steady: identical sides, settled at once — it leaves its budget unused."""
    rng = random.Random(seed)
    per_round: dict[int, float] = {}
    calls = itertools.count()

    def time(call: Call) -> float:
        if "steady" in call.sql:
            return 100.0
        f = per_round.setdefault(next(calls) // 2, 1 + wobble * (2 * rng.random() - 1))  # A and B: one round
        return 100.0 * (ratio * f if call.settings.get("max_threads") == "1" else 1.0)

    return FakeTarget(time)


def _adaptive(target: FakeTarget, out: str | None = None, **kw: object) -> RunDocument:
    wl = _workload("steady", "q")
    outcome = run_plan(_plan((target, wl, {}), (target, wl, {"max_threads": "1"}), iterations=None,
                             max_time_per_query=3.0, probes=False, **kw), out, Progress())
    return outcome.doc


def _paired_d(doc: RunDocument, name: str) -> list[float]:
    from chbench.stats.paired import pair_up

    q = next(x for x in doc.queries if x.name == name)
    return list(pair_up(*([((s.session or 0, s.round), s.client_ms) for s in q.measured(x)] for x in "AB")).d)


def test_a_precise_but_undecided_query_goes_on_until_decided(tmp_path):
    """+3.5% ± 3% a round: precise (±2%) after 7 rounds, but its 90% interval reaches past
    +5% — neither a 5% change nor ruled out. Without a threshold (the rule before) it stops
    there; with one it goes on until that interval fits within ±5%."""
    from chbench.stats.stopping import Look, look

    docs = {thr: _adaptive(_scripted_ratio(1.035, 0.03, 5), str(tmp_path / f"{thr}.json"), threshold=thr)
            for thr in (None, 0.05)}
    before, after = _paired_d(docs[None], "q"), _paired_d(docs[0.05], "q")
    assert look(before, 0.02, 0.05) == Look(precise=True, decided=False)
    assert len(after) > len(before) and look(after, 0.02, 0.05).settled
    verdicts = {thr: build_comparison([str(tmp_path / f"{thr}.json")]).doc.result.query("q") for thr in docs}
    assert verdicts[None].verdict == "unstable" and verdicts[0.05].verdict == "no change"  # type: ignore[union-attr]


def test_an_undecided_query_at_its_budget_goes_on_on_time_others_left():
    """+4% ± 3%: still undecided at its 3 s budget; `steady` settled at once and left most of
    its budget, which q spends — at most EXTEND budgets, never more than was left."""
    from chbench.stats.stopping import EXTEND

    doc = _adaptive(_scripted_ratio(1.04, 0.03, 3), threshold=0.05)
    q = next(x for x in doc.queries if x.name == "q")
    spent = sum(s.client_ms for s in q.samples) / 1000.0
    assert 3.0 + 0.2 < spent <= EXTEND * 3.0 + 0.25  # one round is ~0.2 s
    pool = doc.meta.extra["time_pool"][0]
    assert set(pool["queries_beyond_budget"]) == {"q"} and 0 < pool["beyond_budget_s"] <= pool["saved_s"] + 0.25
    from chbench.report.run import time_pool_lines

    assert [t.text for t in time_pool_lines(doc)] == [
        f"1 query went on past the 3 s budget to decide a verdict, on the {pool['saved_s']:.0f} s others left "
        f"unused: q +{pool['queries_beyond_budget']['q']:.0f} s"]
    before = _adaptive(_scripted_ratio(1.04, 0.03, 3), threshold=None)
    assert len(_paired_d(before, "q")) < len(_paired_d(doc, "q"))


def test_an_undecided_query_stops_at_its_budget_when_no_time_is_left():
    """Both queries undecided (+4.9% ± 6%): nobody leaves time, so each stops at its budget,
    as before."""
    wl = _workload("q1", "q2")
    rng = random.Random(3)
    target = FakeTarget(lambda call: 100.0 * (1.049 * (1 + 0.06 * (2 * rng.random() - 1))
                                              if call.settings.get("max_threads") == "1" else 1.0))
    outcome = run_plan(_plan((target, wl, {}), (target, wl, {"max_threads": "1"}), iterations=None,
                             max_time_per_query=2.0, probes=False), None, Progress())
    for q in outcome.doc.queries:
        spent = sum(s.client_ms for s in q.samples) / 1000.0
        assert 2.0 <= spent < 2.0 + 0.25
    assert outcome.doc.meta.extra["time_pool"] == [{"budget_s": 2.0, "saved_s": 0.0, "beyond_budget_s": 0.0,
                                                    "queries_beyond_budget": {}}]


def test_a_query_slower_than_its_budget_says_how_far_past_it_min_runs_take_it():
    """A side 5 s a run against a 2 s budget: it still runs --min-runs rounds (fewer give
    no verdict) and says so once, in the output and in the file's notes; a fast query
    beside it says nothing."""
    wl = _workload("slow", "fast")
    target = FakeTarget(lambda call: 5000.0 if "slow" in call.sql else 10.0)
    lines: list[str] = []

    class Notes(Progress):
        def note(self, line: str) -> None:
            lines.append(line)

    outcome = run_plan(_plan((target, wl, {}), (target, wl, {"max_threads": "1"}), iterations=None, min_runs=3,
                             max_time_per_query=2.0, probes=False), None, Notes())
    slow = next(q for q in outcome.doc.queries if q.name == "slow")
    assert len(slow.measured("A")) == 3
    want = ("slow: a round takes 10 s, so its 3 runs (--min-runs) go ~20 s past its 2 s budget "
            "(--max-time-per-query); --min-runs or --iterations bounds it")
    assert lines == [f"chbench: {want}"]
    assert outcome.doc.meta.extra["notes"] == [want]
    from chbench.report.run import run_section

    assert any(getattr(b, "text", None) == f"Note: {want}" for b in run_section("r.json", outcome.doc).blocks)


def test_clickbench_queries_file_is_recognised_and_named_as_clickbench_numbers_them():
    """ClickBench's queries.sql read as plain lines named its queries by their words
    (``select-searchengineid-clientip-count-as-c-f3bac8`` for Q31)."""
    from chbench.clickbench import data_text

    wl = parse_workload(data_text("queries.sql"), "queries.sql")
    assert [q.name for q in wl.queries] == [f"Q{i}" for i in range(43)]
    assert wl.queries[0].sql == "SELECT COUNT(*) FROM hits;"
    # any other one-query-a-line file stays as it was
    assert [q.name for q in parse_workload("SELECT 1;\nSELECT 2;\n", "x").queries][0].startswith("select-1")
    assert [q.name for q in parse_workload("SELECT count() FROM hits;\nSELECT 1;\n", "x").queries] != ["Q0", "Q1"]


def test_the_default_warm_up_runs_past_the_jit_compile_and_an_explicit_one_wins(tmp_path):
    """ClickHouse compiles an expression on its 4th use (min_count_to_compile_* = 3): the
    default warm-up covers it on the side where the JIT is on, per the query's own settings
    too; 18.16's defaults (JIT off) keep one warm-up run; --warmup N is taken as given."""
    from chbench.runner.settings import jit_warmup

    jit = {"compile_expressions": "1", "min_count_to_compile_expression": "3",
           "compile_aggregate_expressions": "1", "min_count_to_compile_aggregate_expression": "5",
           "compile_sort_description": "0", "min_count_to_compile_sort_description": "9"}
    assert jit_warmup(jit) == 6  # the largest threshold among the switches that are on, plus the compiling run
    assert jit_warmup({**jit, "compile_aggregate_expressions": "false"}) == 4
    assert jit_warmup({"compile_expressions": "0", "min_count_to_compile_expression": "3"}) == 0
    assert jit_warmup({}) == 0

    on = FakeTarget(settings={"readonly": "0", "compile_expressions": "1", "min_count_to_compile_expression": "3"})
    off = FakeTarget()
    wl = Workload(queries=[Query("q", "SELECT 1"), Query("own", "SELECT 2", settings={"compile_expressions": "0"})],
                  source="test")
    doc = run_plan(_plan((on, wl, {}), (off, wl, {}), warmup=None), None, Progress()).doc

    def warm(name: str, side: str) -> int:
        q = next(q for q in doc.queries if q.name == name)
        return sum(1 for s in q.samples if s.warmup and s.target == side)

    assert (warm("q", "A"), warm("own", "A"), warm("q", "B")) == (4, 1, 1)
    assert doc.meta.extra["warmup_runs"] == {"A": 4, "B": 1} and doc.meta.extra["options"]["warmup"] is None
    # every warm-up run comes before the query's first timed run on that side
    q = doc.queries[0]
    first_timed = min(i for i, s in enumerate(q.samples) if not s.warmup and s.target == "A")
    assert all(i < first_timed for i, s in enumerate(q.samples) if s.warmup and s.target == "A")

    doc = run_plan(_plan((on, wl, {}), warmup=2), None, Progress()).doc
    assert all(sum(1 for s in q.samples if s.warmup) == 2 for q in doc.queries)
    assert "warmup_runs" not in doc.meta.extra


def test_the_calibration_query_warms_up_past_the_jit_compile_too(tmp_path):
    """Its 4th run compiled (+100% seen on the embedded 26.9) and, among 15, made its
    interval too wide to tell a 5% change of the machine; the warm-up runs are kept in
    the file, marked, and count towards none of its samples."""
    from chbench.compare.sides import sides_of

    on = FakeTarget(settings={"readonly": "0", "compile_expressions": "1", "min_count_to_compile_expression": "3"})
    out = tmp_path / "r.json"
    doc = run_plan(_plan((on, _workload("q"), {}), calibration=True), str(out), Progress()).doc
    cal = doc.calibration[0]
    assert [s.warmup for s in cal.samples[:5]] == [True] * 4 + [False]
    assert sum(1 for s in cal.samples if s.warmup) == 4 and sum(1 for s in cal.samples if s.ok) >= 5
    side = sides_of(str(out), open_results(str(out))).sides[0]
    assert len(side.calibration) == sum(1 for s in cal.samples if s.ok)


def test_checkpoints_take_at_most_a_twentieth_of_the_time(monkeypatch, tmp_path):
    """A checkpoint rewrites the whole file: one that took 0.5 s is followed by the next
    no sooner than 10 s later, however often the runner asks (400 queries x 6 runs took
    20.5 s with a write at least every second, 5.3 s throttled; before, 23 writes here); the
    last one is written at once."""
    import types

    from chbench.results import writer as w
    from chbench.results.run import RunDocument

    clock = [100.0]
    writes: list[float] = []

    def slow_write(path, body):
        writes.append(clock[0])
        clock[0] += 0.5

    monkeypatch.setattr(w, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(w, "write_atomic", slow_write)
    writer = w.ResultsWriter(str(tmp_path / "r.json"), RunDocument(), every_s=1.0)
    writer.checkpoint(force=True)
    for _ in range(250):  # asked every 0.1 s for 25 s
        clock[0] += 0.1
        writer.checkpoint()
    gaps = [b - a for a, b in zip(writes, writes[1:], strict=False)]
    assert len(writes) == 3 and min(gaps) >= 10.0  # at 100, ~110.6, ~121.2
    writer.finish()
    assert len(writes) == 4
