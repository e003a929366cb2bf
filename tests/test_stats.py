"""Statistics on synthetic samples with known shifts (no engine needed: pure numbers)."""

import math
from dataclasses import replace

import numpy as np

from chbench.stats.compare import Options, SideData, benjamini_hochberg, compare_queries, holm, machine_change
from chbench.stats.summary import bimodal, drift, instability_reasons, median_ci, relative_ci_halfwidth


def compare_json(*args, **kwargs):
    """The comparison as compare --format json prints it (the JSON contract)."""
    return compare_queries(*args, **kwargs).to_json()


def sides(rng, n_queries, shift, n=15, cv=0.03, base=100.0):
    a, b = {}, {}
    for i in range(n_queries):
        mu = base * (1 + i / 10)
        a[f"q{i}"] = SideData(times=list(mu * rng.lognormal(0, cv, n)))
        b[f"q{i}"] = SideData(times=list(mu * shift * rng.lognormal(0, cv, n)))
    return a, b


def verdicts(doc):
    return [q["verdict"] for q in doc["queries"]]


def test_ten_percent_shift_is_found_slower_with_interval():
    rng = np.random.default_rng(1)
    a, b = sides(rng, 10, 1.10)
    doc = compare_json(list(a), a, b, Options())
    assert verdicts(doc).count("slower") >= 9
    assert "faster" not in verdicts(doc)
    for q in doc["queries"]:
        lo, hi = q["ci"]
        assert lo < q["ratio"] < hi
        assert hi > 1.0
    g = doc["summary"]["geomean"]
    assert 1.07 < g["ratio"] < 1.13 and g["ci"][0] < g["ratio"] < g["ci"][1]


def test_faster_is_symmetric():
    rng = np.random.default_rng(2)
    a, b = sides(rng, 10, 0.88)
    assert verdicts(compare_json(list(a), a, b, Options())).count("faster") >= 9


def test_small_real_shift_below_threshold_is_no_change():
    rng = np.random.default_rng(3)
    a, b = sides(rng, 10, 1.02, n=40, cv=0.01)
    v = verdicts(compare_json(list(a), a, b, Options()))
    assert v.count("slower") == 0 and v.count("faster") == 0


def test_false_alarm_control_over_many_aa_comparisons():
    """100 A/A comparisons of 10 queries each. Holm bounds the chance that a family of 10
    holds any false alarm by alpha (5%), so at most ~5 of the 100 families may."""
    rng = np.random.default_rng(4)
    flagged = 0
    for _ in range(100):
        a, b = sides(rng, 10, 1.0, cv=0.08)
        flagged += sum(v in ("slower", "faster") for v in verdicts(compare_json(list(a), a, b, Options())))
    assert flagged <= 5  # of 1000 query comparisons


def test_noisy_query_is_unstable_not_slower():
    rng = np.random.default_rng(5)
    a = {"q": SideData(times=list(100 * rng.lognormal(0, 0.4, 8)))}
    b = {"q": SideData(times=list(104 * rng.lognormal(0, 0.4, 8)))}
    q = compare_json(["q"], a, b, Options())["queries"][0]
    assert q["verdict"] == "unstable"
    assert any("interval wider" in r for r in q["reasons"])


def test_too_few_runs_is_unstable_with_reason():
    a = {"q": SideData(times=[100.0, 101.0, 99.0])}
    b = {"q": SideData(times=[100.5, 100.0, 99.5])}
    q = compare_json(["q"], a, b, Options())["queries"][0]
    assert q["verdict"] == "unstable" and any("too few runs" in r for r in q["reasons"])


def test_only_in_and_failed_and_flags():
    ok = SideData(times=[30.0 + i * 0.01 for i in range(10)], client_times=[40.0] * 10, server_times=[10.0] * 10)
    failed = SideData(times=[], errors=3, error_sample="Code 47: Unknown identifier")
    a = {"common": ok, "a_only": ok, "breaks": ok}
    b = {"common": ok, "b_only": ok, "breaks": failed}
    doc = compare_json(["common", "a_only", "breaks", "b_only"], a, b, Options())
    by = {q["name"]: q for q in doc["queries"]}
    assert by["a_only"]["verdict"] == "only in A"
    assert by["b_only"]["verdict"] == "only in B"
    assert by["breaks"]["verdict"] == "fails on B only"
    assert any("fails in B only" in f for f in by["breaks"]["flags"])
    assert by["breaks"]["reasons"] == ["B: Code 47: Unknown identifier"]  # what the server said
    flags = " ".join(by["common"]["flags"])
    assert "too short" in flags and "slow on client" in flags


def test_summary_only_verdicts_are_weaker():
    a = {"q": SideData(summary={"min": 90, "median": 100, "p90": 110})}
    b_clear = {"q": SideData(summary={"min": 130, "median": 140, "p90": 150})}
    b_overlap = {"q": SideData(summary={"min": 95, "median": 108, "p90": 130})}
    q1 = compare_json(["q"], a, b_clear, Options())["queries"][0]
    q2 = compare_json(["q"], a, b_overlap, Options())["queries"][0]
    assert q1["verdict"] == "slower" and "summary numbers only: weaker verdict" in q1["flags"]
    assert q2["verdict"] == "unstable"


def test_holm_and_bh():
    p = [0.01, 0.04, 0.03, 0.5]
    assert holm(p) == [0.04, 0.09, 0.09, 0.5]
    bh = benjamini_hochberg(p)
    assert abs(bh[0] - 0.04) < 1e-12 and abs(bh[1] - 0.16 / 3) < 1e-12 and bh[3] == 0.5


def test_median_ci_covers_median_and_narrows():
    rng = np.random.default_rng(6)
    x = list(rng.normal(100, 5, 30))
    lo, hi = median_ci(x)
    assert lo < np.median(x) < hi
    assert relative_ci_halfwidth(list(rng.normal(100, 5, 300))) < relative_ci_halfwidth(x)


def test_drift_and_bimodal_detection():
    steady = [100.0 + (i % 3) for i in range(30)]
    rising = [100.0 * (1 + 0.01 * i) for i in range(30)]
    assert drift(rising)[0] > 0.25 and drift(rising)[1] < 0.01
    assert abs(drift(steady)[0]) < 0.02
    assert bimodal([100.0 + i % 3 for i in range(10)] + [150.0 + i % 3 for i in range(10)])
    assert not bimodal(steady)
    two_groups = [100.0 + i % 3 for i in range(10)] + [150.0 + i % 3 for i in range(10)]
    assert instability_reasons(rising, 0.05) and instability_reasons(two_groups, 0.05)
    # a replay's queries in the workload's order: its literals make the trend and the groups
    assert instability_reasons(rising, 0.05, ordered=False) == []
    assert instability_reasons(two_groups, 0.05, ordered=False) == []
    assert instability_reasons(rising[:3], 0.05, ordered=False) == ["too few runs (3 < 5)"]


def test_a_replays_order_is_not_read_as_the_machines():
    """Two sides of the same multiset of statements whose literals grow over the workload:
    unordered, each is judged on the rank test and its interval, not called drifting."""
    rng = np.random.default_rng(11)
    grow = [10.0 * (1 + 0.1 * i) for i in range(40)]
    a = SideData(times=[t * rng.lognormal(0, 0.01) for t in grow], ordered=False)
    b = SideData(times=[t * rng.lognormal(0, 0.01) for t in grow], ordered=False)
    row = compare_queries(["q"], {"q": a}, {"q": b}, Options()).queries[0]
    assert not any("drifting" in r or "bimodal" in r for r in row.reasons + row.flags)
    ordered = compare_queries(["q"], {"q": replace(a, ordered=True)}, {"q": replace(b, ordered=True)},
                              Options()).queries[0]
    assert any("drifting" in r for r in ordered.reasons + ordered.flags)


def test_calibration_change_explains_a_common_shift_in_files_without_probes():
    """Files without machine probes: the calibration query moving the same way as every
    query explains the common shift, which is taken out of the verdicts."""
    rng = np.random.default_rng(7)
    cal_a = list(20 * rng.lognormal(0, 0.01, 30))
    cal_b = list(20 * 1.08 * rng.lognormal(0, 0.01, 30))
    m = machine_change(cal_a, cal_b)
    assert m is not None and m["material"] and 1.06 < m["calibration_ratio"] < 1.10
    a, b = sides(rng, 5, 1.08, n=30, cv=0.01)
    plain = compare_json(list(a), a, b, Options())
    guarded = compare_json(list(a), a, b, Options(), machine=m)
    assert verdicts(plain).count("slower") == 5
    assert plain["summary"]["shift"]["finding"] == "slower"  # unexplained: a global finding
    assert verdicts(guarded) == ["no change"] * 5
    shift = guarded["summary"]["shift"]
    assert shift["explained_by_machine"] and shift["explained_by"] == "calibration query"
    assert shift["finding"] is None and shift["ci"][0] < 1.08 < shift["ci"][1]
    assert all(q["vs_one"]["verdict"] == "slower" for q in guarded["queries"])


def test_calibration_change_widens_intervals_when_no_common_shift_can_be_measured():
    rng = np.random.default_rng(7)
    m = machine_change(list(20 * rng.lognormal(0, 0.01, 30)), list(20 * 1.08 * rng.lognormal(0, 0.01, 30)))
    a, b = sides(rng, 3, 1.08, n=30, cv=0.01)  # three queries: too few for a common shift
    plain = compare_json(list(a), a, b, Options())
    guarded = compare_json(list(a), a, b, Options(), machine=m)
    assert guarded["summary"]["shift"] is None
    assert verdicts(plain).count("slower") == 3 and verdicts(guarded).count("slower") == 0
    assert guarded["queries"][0]["ci"][0] < plain["queries"][0]["ci"][0]


def test_median_interval_rank_is_scipys_binomial_quantile():
    """The exact integer computation behind median_ci equals scipy's binom.ppf."""
    from scipy import stats as sps

    from chbench.stats.summary import _median_rank

    for conf in (0.95, 0.99):
        for n in [*range(6, 400), 999, 1000, 1500, 2048]:
            assert _median_rank(n, conf) == max(int(sps.binom.ppf((1 - conf) / 2, n, 0.5)) - 1, 0), (n, conf)


def test_an_interval_too_few_rounds_cannot_bound_is_valid_json():
    """Five paired rounds give the interval (0, ∞): the JSON says null for the open end
    (strict JSON has no Infinity; jq and browsers refuse it)."""
    import json

    from chbench.stats.paired import Pairs, analyse
    from chbench.stats.verdict import QueryComparison

    a, b = [10.0, 11.0, 10.5, 10.2, 10.8], [10.1, 11.2, 10.4, 10.3, 10.9]
    res = analyse(Pairs(np.log(np.array(b) / np.array(a)), np.array([True, False, True, False, True]), 0, 0))
    assert math.isinf(res.log_hi)
    row = QueryComparison("q", ratio=1.0, ci=(0.0, math.inf), paired=res)
    text = json.dumps(row.to_json(), allow_nan=False)
    assert json.loads(text)["ci"] == [0.0, None] and json.loads(text)["paired"]["ci"][1] is None


def test_times_of_zero_ms_are_skipped_not_a_traceback():
    """Whole-millisecond times (a query_log's duration, a foreign file's rounding) can be 0:
    log(0) was a math domain error in compare, and ClickHouse's rule divided by zero."""
    zero = SideData(times=[0.0] * 10)
    fine = SideData(times=[5.0 + 0.01 * i for i in range(10)])
    for method_opts in (Options(), Options(paired=False, separate=True)):
        rows = compare_queries(["q", "r"], {"q": fine, "r": fine}, {"q": zero, "r": fine}, method_opts).queries
        assert rows[0].verdict == "skipped" and "B: times of 0 ms" in rows[0].reasons[0]
        assert rows[1].verdict == "no change"
    from chbench.stats.clickhouse import apply_clickhouse

    result = compare_queries(["q"], {"q": zero}, {"q": fine}, Options())
    apply_clickhouse(result, {"q": zero}, {"q": fine}, {})
    assert result.queries[0].verdict == "skipped"
