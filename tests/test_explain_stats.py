"""The statistics behind `chbench explain` (chbench/stats/explain.py), on synthetic
profiles with a known answer: what changed is found and ranked, noise is not."""

from __future__ import annotations

import numpy as np

from chbench.stats.explain import ProfileRun, explain_query

OPS = {"AggregatingTransform": 40_000.0, "ExpressionTransform": 20_000.0, "NumbersRange": 8_000.0}


def _runs(rng: np.random.Generator, n: int, counters: dict[str, float], ops: dict[str, float],
          noise: float = 0.05) -> list[ProfileRun]:
    out = []
    for r in range(n):
        jitter = lambda v: float(max(0.0, v * np.exp(rng.normal(0, noise))))  # noqa: E731
        c = {k: (v if k in ("SelectedMarks", "threads", "result_rows") else jitter(v)) for k, v in counters.items()}
        out.append(ProfileRun((0, r), c, {k: jitter(v) for k, v in ops.items()}))
    return out


BASE = {"SelectedMarks": 100.0, "threads": 3.0, "result_rows": 10.0, "RealTimeMicroseconds": 70_000.0,
        "OSCPUVirtualTimeMicroseconds": 120_000.0, "UserTimeMicroseconds": 110_000.0, "ContextLock": 40.0,
        "FunctionExecute": 12.0}


def test_a_and_a_changes_nothing():
    rng = np.random.default_rng(1)
    flagged = tested = 0
    for _ in range(40):
        why = explain_query(_runs(rng, 15, BASE, OPS), _runs(rng, 15, BASE, OPS), paired=True, time_ratio=1.0)
        flagged += len(why.counters) + len(why.operators)
        tested += why.tested
    assert tested > 300 and flagged / tested <= 0.05


def test_more_marks_read_is_the_first_explanation():
    rng = np.random.default_rng(2)
    b_counters = {**BASE, "SelectedMarks": 210.0, "RealTimeMicroseconds": 120_000.0}
    b_ops = {**OPS, "AggregatingTransform": 80_000.0}
    why = explain_query(_runs(rng, 15, BASE, OPS), _runs(rng, 15, b_counters, b_ops), paired=True, time_ratio=1.6)
    assert why.top[0].name == "SelectedMarks" and abs(why.top[0].ratio - 2.1) < 1e-9
    assert "reads 2.1× the marks" in why.facts
    assert [m.name for m in why.operators] == ["AggregatingTransform"]
    assert any("AggregatingTransform" in f and "every other operator unchanged" in f for f in why.facts)
    doc = why.to_json()
    assert set(doc) >= {"counters", "operators", "summary"}
    first = doc["counters"][0]
    assert set(first) >= {"name", "a", "b", "ratio", "ci"} and first["ci"][0] <= first["ratio"] <= first["ci"][1]


def test_fewer_threads_and_an_operator_gone():
    rng = np.random.default_rng(3)
    b_counters = {**BASE, "threads": 1.0}
    b_ops = {k: v for k, v in OPS.items() if k != "ExpressionTransform"} | {"MergeJoinTransform": 30_000.0}
    why = explain_query(_runs(rng, 10, BASE, OPS), _runs(rng, 10, b_counters, b_ops), paired=False, time_ratio=1.5)
    assert why.facts[0].startswith("plan changed") and "new MergeJoinTransform" in why.facts[0]
    assert "gone ExpressionTransform" in why.facts[0]
    assert "ran on 1 thread instead of 3" in why.facts
    assert any("the same work on fewer threads" in f for f in why.facts)  # CPU unchanged, wall +50%
    threads = next(m for m in why.counters if m.name == "threads")
    assert abs(threads.ratio - 1 / 3) < 1e-9
    assert why.top[0].name == "MergeJoinTransform"  # a new operator with a real share of the time


def test_too_few_runs_say_so():
    rng = np.random.default_rng(4)
    why = explain_query(_runs(rng, 2, BASE, OPS), _runs(rng, 2, BASE, OPS), paired=True)
    assert why.note and "too few runs" in why.note and why.to_json()["counters"] == []


def test_more_rows_read_is_normalised_per_row():
    rng = np.random.default_rng(5)
    base = {**BASE, "read_rows": 1_000_000.0}
    more = {**base, "read_rows": 2_000_000.0, "RealTimeMicroseconds": 140_000.0}
    b_ops = {k: 2 * v for k, v in OPS.items()}
    why = explain_query(_runs(rng, 12, base, OPS), _runs(rng, 12, more, b_ops), paired=True, time_ratio=2.0)
    agg = next(m for m in why.operators if m.name == "AggregatingTransform")
    assert agg.per_row is not None and abs(agg.per_row - 1.0) < 0.1  # twice the time for twice the rows
    assert "reads 2× the rows" in why.facts and "per row read ±0% (2× the rows)" in why.facts


def test_a_changed_query_without_profiles_still_carries_why(tmp_path):
    from chbench.compare import build_comparison
    from chbench.results import RunDocument, RunQuery, RunSample, RunTarget
    from chbench.results.run import QuerySide

    doc = RunDocument(targets=[RunTarget(id="A", kind="embedded", url="embedded", label="a"),
                               RunTarget(id="B", kind="embedded", url="embedded", label="b")])
    q = RunQuery(name="q", sql="SELECT 1", sql_sent="SELECT 1", target=["A", "B"],
                 sides={s: QuerySide(sql="SELECT 1", sql_sent="SELECT 1") for s in "AB"})
    for r in range(12):
        for side, ms in (("A", 10.0 + r % 3 * 0.1), ("B", 20.0 + r % 3 * 0.1)):
            q.samples.append(RunSample(query_id=f"{side}{r}", client_ms=ms, target=side, round=r))
    doc.queries = [q]
    doc.meta.extra["explain"] = {s: {"counters": False, "operators": False, "runs": 0,
                                     "notes": ["embedded: no system.query_log to read each run's counters from"]}
                                 for s in "AB"}
    path = tmp_path / "r.json"
    path.write_text(__import__("json").dumps(doc.to_json()))
    row = build_comparison([str(path)]).doc.queries[0]
    assert row.verdict == "slower" and row.why is not None
    assert row.why["counters"] == [] and row.why["operators"] == [] and "no system.query_log" in row.why["summary"]
    # one side profiled (26.9) and the other an engine that keeps none (24.8): that side's reason,
    # not "too few runs with a server profile (0 and 12)"
    for s in q.samples:
        if s.target == "B":
            s.profile = {"counters": {"RealTimeMicroseconds": 20_000.0}, "operators": {}}
    doc.meta.extra["explain"] = {"A": {"counters": False, "operators": False, "runs": 0,
                                       "notes": ["embedded@24.8: this engine keeps no system.query_log"]},
                                 "B": {"counters": True, "operators": True, "runs": 12, "notes": []}}
    path.write_text(__import__("json").dumps(doc.to_json()))
    row = build_comparison([str(path)]).doc.queries[0]
    assert row.why is not None and row.why["summary"] == "embedded@24.8: this engine keeps no system.query_log"


def test_an_older_server_without_operator_times_or_a_counter_is_not_a_plan_change():
    """26.9 against 18.16 (seen on a real perf test): B has no processors_profile_log and
    no SelectedRows event, but query_log's read_rows on both — no 'plan changed: gone …',
    no 'reads no rows'."""
    rng = np.random.default_rng(5)
    a_counters = {**BASE, "read_rows": 10_000_000.0, "SelectedRows": 10_000_000.0}
    b_counters = {**BASE, "read_rows": 10_000_000.0, "threads": 1.0, "RealTimeMicroseconds": 120_000.0}
    why = explain_query(_runs(rng, 12, a_counters, OPS), _runs(rng, 12, b_counters, {}), paired=True, time_ratio=1.7)
    assert why.operators == [] and not any("plan changed" in f or "rows" in f for f in why.facts)
    assert "ran on 1 thread instead of 3" in why.facts


def test_a_counter_the_other_version_may_not_have_is_not_compared():
    """18.16 against 26.9 (seen: SelectedBytes, SelectedRows, NetworkSendBytes … "new in B"
    ranked first): a counter B logged and A never did is left out across versions when A's
    server cannot list its counters, and by A's list when it can; on one version, never
    logged is 0 and it is compared."""
    rng = np.random.default_rng(6)
    a_runs = _runs(rng, 12, BASE, OPS)
    b_runs = _runs(rng, 12, {**BASE, "SelectedBytes": 5e6, "QueryAnalysisMicroseconds": 300.0}, OPS)
    new = {"QueryAnalysisMicroseconds", "SelectedBytes"}

    across = explain_query(a_runs, b_runs, paired=True, time_ratio=1.0, versions_differ=True)
    assert across.unknown == {"a": sorted(new)} and across.listed == ()
    assert not new & {m.name for m in across.counters}
    assert across.to_json()["not_compared"] == {"A": {"counters": sorted(new), "by_its_list": False}}

    # A's server lists what it has: SelectedBytes it has (so 0 there: compared), the other not
    listed = explain_query(a_runs, b_runs, paired=True, time_ratio=1.0,
                           known=(frozenset(BASE) | {"SelectedBytes"}, None), versions_differ=True)
    assert listed.unknown == {"a": ["QueryAnalysisMicroseconds"]} and listed.listed == ("a",)
    assert "SelectedBytes" in {m.name for m in listed.counters}

    same = explain_query(a_runs, b_runs, paired=True, time_ratio=1.0)
    assert same.unknown == {} and new <= {m.name for m in same.counters}

    from chbench.report.explain import unknown_lines

    assert [t.text for t in unknown_lines(across)] == [
        "not compared: 2 counters B logged and A's server (another version) never did: 0 there, or a counter it "
        "does not have (QueryAnalysisMicroseconds, SelectedBytes)"]
    assert [t.text for t in unknown_lines(listed)] == [
        "not compared: 1 counter A's server version does not have (QueryAnalysisMicroseconds)"]


def test_the_results_bytes_across_versions_are_accounting_not_a_cause():
    """18.16 counts one UInt64 row as 8 result bytes, 26.9 as 136: with the same rows on
    another version that is not "the result is 17× the bytes", nor the first cause; on one
    version it is where the result is large."""
    rng = np.random.default_rng(7)
    a_runs = _runs(rng, 12, {**BASE, "result_bytes": 8.0}, OPS)
    b_runs = _runs(rng, 12, {**BASE, "result_bytes": 136.0, "RealTimeMicroseconds": 140_000.0,
                             "SelectedMarks": 200.0}, OPS)
    across = explain_query(a_runs, b_runs, paired=True, time_ratio=2.0, versions_differ=True)
    assert not any("bytes" in f for f in across.facts)
    assert across.top[0].name == "SelectedMarks" and "result_bytes" in {m.name for m in across.counters}
    # on one version: the blocks a small result sits in (10 rows: 256 bytes, 9,328 with
    # max_threads=1 on chDB 26.9) are no cause either; a large result's bytes are
    same = explain_query(a_runs, b_runs, paired=True, time_ratio=2.0)
    assert not any("bytes" in f for f in same.facts) and same.top[0].name == "SelectedMarks"
    a_big = _runs(rng, 12, {**BASE, "result_bytes": 8e6}, OPS)
    b_big = _runs(rng, 12, {**BASE, "result_bytes": 136e6, "RealTimeMicroseconds": 140_000.0,
                            "SelectedMarks": 200.0}, OPS)
    big = explain_query(a_big, b_big, paired=True, time_ratio=2.0)
    assert any(f.startswith("the result is 1") for f in big.facts) and big.top[0].name == "result_bytes"


def test_threads_two_versions_count_differently_are_no_fact():
    """18.16 counts every thread that worked on a query (thread_numbers), 26.9 the peak at
    once (peak_threads_usage): between them "ran on 1 thread instead of 3" would compare two
    accountings — the counter stays in the table, ranked with the effects, with no fact."""
    rng = np.random.default_rng(8)
    a_runs = _runs(rng, 10, {**BASE, "SelectedMarks": 200.0}, OPS)
    b_runs = _runs(rng, 10, {**BASE, "threads": 1.0}, OPS)
    apart = explain_query(a_runs, b_runs, paired=False, time_ratio=1.5, counted_apart=frozenset({"threads"}))
    assert not any("thread" in f for f in apart.facts)
    threads = next(m for m in apart.counters if m.name == "threads")
    assert apart.top[0].name == "SelectedMarks" and threads.tier == 3  # with the effects
    alike = explain_query(a_runs, b_runs, paired=False, time_ratio=1.5)
    assert "ran on 1 thread instead of 3" in alike.facts


def test_two_interfaces_ways_out_are_not_a_plan_change():
    """The embedded engine side by side with a server over HTTP (26.9, 2026-12-07): the
    results leave through LazyOutputFormat in one and Null in the other, only the server
    sends bytes, and the engine's pulling thread counts as one of the query's. None of
    that is the plan or a cause: the operator that slowed is ranked first."""
    rng = np.random.default_rng(4)
    a_counters, a_ops = {**BASE, "threads": 2.0}, {**OPS, "LazyOutputFormat": 300.0}
    b_counters = {**BASE, "threads": 1.0, "NetworkSendBytes": 810.0, "InterfaceHTTPSendBytes": 810.0,
                  "RealTimeMicroseconds": 84_000.0}
    b_ops = {**OPS, "NumbersRange": 10_000.0, "Null": 40.0}
    a, b = _runs(rng, 12, a_counters, a_ops), _runs(rng, 12, b_counters, b_ops)
    plain = explain_query(a, b, paired=True, time_ratio=1.2)
    assert plain.facts[0].startswith("plan changed") and "new Null" in plain.facts[0]  # one interface: a change
    why = explain_query(a, b, paired=True, time_ratio=1.2, interfaces_differ=True)
    assert not any(f.startswith("plan changed") or f.startswith("ran on") for f in why.facts), why.facts
    assert "results left through Null instead of LazyOutputFormat (each side's interface, not its plan)" in why.facts
    assert why.top[0].name == "NumbersRange"
    interface = {"LazyOutputFormat", "Null", "NetworkSendBytes", "InterfaceHTTPSendBytes", "threads"}
    ranked = [m.name for m in why.top]
    shown = interface & set(ranked)
    assert shown and all(ranked.index(n) > ranked.index("NumbersRange") for n in shown)
