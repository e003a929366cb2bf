"""Runs of three or more sides through the scripted FakeTarget: the order each round
runs them in, and compare's judgement of every pair (tests/test_trend_cli.py runs real
engines)."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from chbench.compare.nway import build_nway, side_index
from chbench.core.schedule import round_order
from chbench.errors import EXIT_FINDING, EXIT_OK, QueryError
from chbench.plan import Plan, SidePlan, compared_pairs
from chbench.runner import run_plan
from chbench.targets.fake import FakeTarget
from chbench.ui.progress import Progress
from chbench.workload import Query, Workload
from tests.conftest import run_cli


def test_two_sides_alternate_exactly_as_before():
    assert [round_order(["A", "B"], r) for r in range(4)] == [["A", "B"], ["B", "A"], ["A", "B"], ["B", "A"]]


def test_every_side_first_equally_often_and_every_pair_in_both_orders():
    for n in (3, 4, 5):
        ids = [chr(ord("A") + i) for i in range(n)]
        orders = [round_order(ids, r) for r in range(2 * n)]
        assert Counter(o[0] for o in orders) == {s: 2 for s in ids}
        for r in range(0, 2 * n, 2):  # within each two rounds, x before y once and y before x once
            for x, y in itertools.combinations(ids, 2):
                firsts = [o.index(x) < o.index(y) for o in orders[r:r + 2]]
                assert sorted(firsts) == [False, True]


def test_compared_pairs_baseline_then_adjacent():
    assert compared_pairs(["A", "B"]) == [("A", "B")]
    assert compared_pairs(["A", "B", "C", "D"]) == [("A", "B"), ("A", "C"), ("A", "D"), ("B", "C"), ("C", "D")]
    assert compared_pairs(["A", "B", "C"], baseline=1) == [("B", "A"), ("B", "C")]


def _three_sided(tmp_path, slow_c: float = 1.10, iterations: int = 12, a_fails_q2: bool = False):
    """Three sides of one workload; C's times ``slow_c`` × A's, 1% noise (q2 an error on
    A with ``a_fails_q2``: a setting the old version does not know)."""
    rng = random.Random(3)
    factors = {"A": 1.0, "B": 1.0, "C": slow_c}

    def target(sid: str) -> FakeTarget:
        def handler(call):  # noqa: ANN001, ANN202
            if a_fails_q2 and sid == "A" and "q2" in call.sql:
                raise QueryError(115, "Unknown setting enable_lazy_columns_replication")
            base = 100.0 if "q1" in call.sql else 40.0
            return base * factors[sid] * (1 + rng.gauss(0, 0.01))
        return FakeTarget(handler, url=f"fake://{sid}")

    wl = Workload(queries=[Query(n, f"SELECT '{n}'") for n in ("q1", "q2")], source="test")
    plan = Plan(sides=[SidePlan(sid, target(sid), wl, {}, label=f"side {sid}") for sid in "ABC"], warmup=0,
                iterations=iterations, calibration=False, quiet_wait=0.0, probes=False)
    out = tmp_path / "abc.json"
    outcome = run_plan(plan, str(out), Progress())
    assert outcome.exit_code == (EXIT_FINDING if a_fails_q2 else EXIT_OK)
    return out, outcome.doc


def test_three_sides_run_each_round_and_compare_judges_each_pair(tmp_path):
    out, doc = _three_sided(tmp_path)
    q1 = doc.queries[0]
    for r in range(12):
        assert sorted(s.target for s in q1.samples if s.round == r) == ["A", "B", "C"]
    nway = build_nway(str(out))
    got = {("ABC"[a], "ABC"[b]): {q.name: q.verdict for q in c.doc.queries}
           for (a, b), c in zip(nway.pairs, nway.comparisons, strict=True)}
    assert got[("A", "B")] == {"q1": "no change", "q2": "no change"}
    assert got[("A", "C")] == {"q1": "slower", "q2": "slower"} == got[("B", "C")]
    js = nway.to_json()
    assert js["baseline"] == "A: side A" and [c["kind"] for c in js["comparisons"]] == ["baseline"] * 2 + ["adjacent"]
    assert "alpha / 3" in js["correction"]
    assert side_index(nway.labels, "c") == 2 and side_index(nway.labels, "2") == 1


def test_compare_cli_on_three_sides_exit_1_and_baseline(tmp_path):
    out, _ = _three_sided(tmp_path)
    r = run_cli("compare", str(out), "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    assert len(doc["comparisons"]) == 3 and doc["comparisons"][1]["b"] == "C: side C"
    r = run_cli("compare", str(out), "--baseline", "C", "--format", "json")
    pairs = [(c["a"][0], c["b"][0]) for c in r.json()["comparisons"]]
    assert pairs == [("C", "A"), ("C", "B"), ("A", "B")]
    assert {q["verdict"] for q in r.json()["comparisons"][0]["queries"]} == {"faster"}
    bad = run_cli("compare", str(out), "--baseline", "Z")
    assert bad.code == 2 and "--baseline Z" in bad.stderr


def test_three_sides_stopped_before_a_query_on_one_side_fail_the_gate(tmp_path):
    """A file of three sides whose run stopped before C's q2: q2 is 'skipped' where C is in
    the pair, and the gate fails, saying why, as it does for two sides."""
    import json

    out, _ = _three_sided(tmp_path, slow_c=1.0)
    doc = json.loads(out.read_text())
    doc["status"] = "interrupted"
    q2 = next(q for q in doc["queries"] if q["name"] == "q2")
    q2["samples"] = [s for s in q2["samples"] if s["target"] != "C"]
    out.write_text(json.dumps(doc))
    r = run_cli("compare", str(out), "--format", "json")
    verdicts = {(c["a"][0], c["b"][0]): {q["name"]: q["verdict"] for q in c["queries"]}
                for c in r.json()["comparisons"]}
    assert verdicts[("A", "C")]["q2"] == verdicts[("B", "C")]["q2"] == "skipped" != verdicts[("A", "B")]["q2"]
    assert r.code == 1 and "1 query not measured: a run stopped before it (q2) — exit 1" in r.stderr


def test_trend_of_too_few_rounds_says_so_and_writes_strict_json(tmp_path):
    import json

    from chbench.compare import CompareOptions
    from chbench.trend.driver import add_trend

    out, _ = _three_sided(tmp_path, iterations=3)
    trend = add_trend(str(out), ["v1", "v2", "v3"], CompareOptions())
    doc = json.loads(out.read_text())  # strict JSON: no Infinity
    assert doc["trend"] == json.loads(json.dumps(trend, allow_nan=False))
    assert trend["steps"] == [] and "a speed step needs at least" in trend["note"]
    # a query that fails on one version has no rounds for want of answers: no such note
    (tmp_path / "f").mkdir()
    out, _ = _three_sided(tmp_path / "f", a_fails_q2=True)
    assert "note" not in add_trend(str(out), ["v1", "v2", "v3"], CompareOptions())
