"""``chbench load --slo``: the capacity under an SLO, against a server whose capacity the
test builds (a query of known length on a known number of connections), and the
statistics it decides with."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from scipy import stats as sps

from chbench.errors import UsageError
from chbench.load.capacity import bracket_line, parse_slo, samples_to_decide
from chbench.stats.histogram import Histogram
from chbench.stats.quantile import percentile_interval, rate_interval
from tests.conftest import assert_one_line_error, load, run_cli
from tests.engines import ModernServer


def test_slo_spellings() -> None:
    assert parse_slo("p99<=200ms").percentile == 99 and parse_slo("p99<=200ms").limit == 200
    assert parse_slo(" p99.9 <= 1s ").limit == 1000 and parse_slo("p50<=500us").limit == 0.5
    assert parse_slo("errors<=0.1%").percentile is None and parse_slo("errors<=0.1%").limit == pytest.approx(0.001)
    for bad in ("p99<200ms", "latency<=1s", "p100<=1ms", "errors<=lots", "errors<=200%", "errors<=1"):
        with pytest.raises(UsageError):
            parse_slo(bad)
    assert samples_to_decide(parse_slo("p99<=1ms")) == 368  # 0.99^368 < 2.5%: the first finite upper bound


def test_percentile_interval_covers() -> None:
    """The order-statistic interval covers the true p99 of a known distribution about
    95% of the time (200 samples of 2,000 exponential latencies)."""
    true_p99 = -10.0 * __import__("math").log(0.01)
    rng = random.Random(7)
    covered = 0
    for _ in range(200):
        h = Histogram()
        for _ in range(2000):
            h.record(rng.expovariate(0.1))
        _, low, high = percentile_interval(h, 99)
        covered += low <= true_p99 * 1.004 and high >= true_p99 * 0.996  # bucket resolution: 0.4%
    assert 180 <= covered <= 200
    h = Histogram()
    h.record(1.0)
    assert percentile_interval(h, 99, never_sent=5)[2] == float("inf")  # never sent: infinitely slow
    rate, low, high = rate_interval(3, 1000)
    assert rate == 0.003 and low == pytest.approx(sps.beta.ppf(0.025, 3, 998)) and high > 0.006


def test_bad_slo_is_one_line() -> None:
    assert_one_line_error(run_cli("load", "-q", "SELECT 1", "--slo", "p99 < 1ms"))
    assert_one_line_error(run_cli("load", "-q", "SELECT 1", "--slo", "p99<=1ms", "--rate", "10"))
    assert_one_line_error(run_cli("load", "-q", "SELECT 1", "--slo", "p99<=1ms", "--rate-min", "50",
                                  "--rate-max", "10"))


def test_capacity_of_a_known_server(modern: ModernServer, tmp_path: Path) -> None:
    """Two connections and a 20 ms query: at most ~2/0.021 requests a second are served;
    beyond, the open-loop backlog grows without bound and p99 breaks 100 ms."""
    out, html = tmp_path / "cap.json", tmp_path / "cap.html"
    r = run_cli("load", "--target", modern.native_url, "-q", "SELECT sleep(0.02)", "-c", "2", "--slo",
                "p99<=100ms", "--slo", "errors<=1%", "--rate-min", "40", "--rate-max", "320", "--step-duration",
                "2", "--out", str(out), timeout=300)
    assert r.code == 0, r.stderr
    cap = load(out)["capacity"]
    assert set(cap) >= {"rate", "ci", "broken_at", "slo", "steps", "budget", "probe", "ended_by"}
    assert (cap["rate_min"], cap["rate_max"]) == (40.0, 320.0)
    lines = r.stderr.splitlines()
    plan = lines[lines.index("Loaded 1 queries.") + 1]  # the plan comes first
    assert plan.startswith("Capacity search: p99<=100ms needs 368 requests") and "errors<=1% needs" in plan
    assert cap["budget"]["requests_per_step"] == {"p99<=100ms": 368, "errors<=1%": samples_to_decide(
        parse_slo("errors<=1%"))} and cap["budget"]["max_time_s"] <= 600
    probe = cap["probe"]["levels"]
    assert [p["lanes"] for p in probe] == [1, 2] and cap["probe"]["qps"] == max(p["qps"] for p in probe)
    known = 2 * probe[0]["qps"]  # the service time, measured where nothing queues (one closed-loop lane)
    assert cap["ended_by"] == "bracket" and cap["complete"] is True
    assert 0.85 * known <= cap["rate"] <= 1.05 * known, (cap["rate"], known)
    assert cap["ci"][0] == cap["rate"] and cap["ci"][1] > cap["rate"]
    # the bracket's top is the first rate not shown to hold: a step that broke, or one just
    # past the capacity still undecided when it ended (its backlog grows slowly: CI saw a
    # search whose steps above the capacity all ended so, broken_at None)
    assert any(s["verdict"] != "holds" and s["offered_qps"] == cap["ci"][1] for s in cap["steps"])
    assert cap["broken_at"] is None or cap["broken_at"] >= cap["ci"][1]
    assert all(s["verdict"] == "holds" for s in cap["steps"] if s["offered_qps"] <= cap["rate"])
    assert [x["slo"] for x in cap["slo"]] == ["p99<=100ms", "errors<=1%"]
    for st in cap["steps"]:  # each SLO says how bursty it was; a step shows what it was judged on
        assert all(j["dispersion"] >= 1.0 for j in st["slos"])
        if st["verdict"] == "holds" and st["runs"] <= 3:  # held at a 95% look (early breaks: 99.9%, late: 98%)
            assert st["p99_ci"] == st["slos"][0]["ci"]
    assert r.stdout.strip().splitlines()[-1] == r.stderr.strip().splitlines()[-1] == f"capacity: {cap['rate']:.1f} QPS"
    doc = load(out)
    assert len(doc["levels"]) >= len(cap["steps"])  # every run of every step kept, histograms and all
    assert run_cli("report", str(out), "--html", str(html)).code == 0
    assert "Capacity under p99&lt;=100ms" in html.read_text() or "Capacity under p99<=100ms" in html.read_text()


def test_capacity_search_keeps_to_its_budget(modern: ModernServer, tmp_path: Path) -> None:
    """An error SLO of 0.1% needs 3,688 requests per step — far more than 15 seconds hold
    at this server's rate: the search says so first and ends with the bracket it has
    (none), within its budget, the file complete, and says the --max-time its first step
    needed."""
    out = tmp_path / "cap.json"
    t0 = time.monotonic()
    r = run_cli("load", "--target", modern.native_url, "-q", "SELECT sleep(0.02)", "-c", "2", "--slo",
                "errors<=0.1%", "--rate-max", "400", "--max-time", "15", "--step-duration", "3", "--out", str(out),
                timeout=120)
    took = time.monotonic() - t0
    assert r.code == 0, r.stderr
    assert took < 15 + 10  # the budget, and the interpreter's start and the tear-down around it
    assert "errors<=0.1% needs 3,688 requests without an error per step" in r.stderr
    first = re.search(r"--max-time ended the search before its first step: a step at ([\d.]+) QPS needs (\d+) s "
                      r"to hold \(give --max-time (\d+) or more\)", r.stderr)
    assert first is not None, r.stderr
    assert abs(int(first[2]) - 1.1 * 3688 / float(first[1])) <= 1 and int(first[3]) > 15
    doc = load(out)
    assert doc["status"] == "complete" and doc["capacity"]["ended_by"] == "budget"
    assert doc["capacity"]["rate"] is None and r.stdout.strip() == "capacity: 0.0 QPS"


def test_the_bracket_line_names_the_range_the_user_gave():
    """A report read from the file says --rate-min as given, not the lowest step tried
    (the steps start near the probe's rate); a file from before keeps its lowest step."""
    cap = {"rate": None, "ci": [None, 50.0], "ended_by": "rate-min", "rate_min": 10.0,
           "steps": [{"offered_qps": 50.0}, {"offered_qps": 25.0}]}
    assert bracket_line(cap) == "The SLO does not hold at --rate-min 10 QPS: the capacity is below it."
    del cap["rate_min"]
    assert "--rate-min 25 QPS" in bracket_line(cap)


def test_an_undecided_step_goes_on_only_while_it_leans_to_hold():
    """At the third full look an undecided error SLO ends the step (not holding) unless
    its estimate lies well within the limit; then it goes on, and later looks judge it at
    the stricter LEANING_CONFIDENCE."""
    from chbench.load.capacity import LEANING_CONFIDENCE, CapacityStep, _Looks, judge
    from chbench.load.recorder import Stats

    class Search:
        slos = [parse_slo("errors<=0.1%")]
        steps: list = []

        def on_progress(self, p):
            pass

    def at_third_look(errors: int, n: int) -> _Looks:
        looks = _Looks(Search(), 100.0, 10.0)  # type: ignore[arg-type]
        st = Stats()
        st.errors, st.queries = errors, n - errors
        for t in (10.0, 20.0):
            assert not looks.decided({(0, 0): st}, {"due": n, "started": n}, t)
        looks.decided({(0, 0): st}, {"due": n, "started": n}, 30.0)
        return looks

    leaning = at_third_look(5, 10_000)  # 0.05%, its 95% interval reaches 0.117%: undecided
    assert leaning.decided_at is None and leaning.verdict == "undecided"
    not_leaning = at_third_look(8, 10_000)  # 0.08%: undecided too, and not within 0.6 of the limit
    assert not_leaning.decided_at == 30.0 and not_leaning.verdict == "undecided"
    st = Stats()
    st.errors, st.queries = 8, 16_000
    strict = judge(Search.slos[0], st, 0, LEANING_CONFIDENCE)
    assert strict["ci"][1] > judge(Search.slos[0], st, 0)["ci"][1]
    assert CapacityStep(100.0, st, 60.0, 16_008, 16_008, 0).judged(Search.slos)[0]["verdict"] == "holds"


def test_bad_requests_in_bursts_widen_the_slo_intervals():
    """Errors that come in bursts (here only in 1 of 10 seconds) are worth fewer
    independent requests: the binomial interval covers the true rate far less than 95% of
    the time, the one over n / dispersion about as often as it says."""
    import numpy as np

    from chbench.stats.quantile import dispersion

    rng = np.random.default_rng(28)
    true_rate, per_second, seconds = 0.002, 100, 60
    plain = widened = 0
    phis = []
    for _ in range(400):
        bursts = rng.random(seconds) < 0.1
        bad = rng.binomial(per_second, np.where(bursts, true_rate / 0.1, 0.0))
        bins = [(per_second, int(b)) for b in bad]
        phi = dispersion(bins)
        phis.append(phi)
        n, e = per_second * seconds, int(bad.sum())
        _, lo, hi = rate_interval(e, n)
        plain += lo <= true_rate <= hi
        _, lo, hi = rate_interval(e, n, dispersion=phi)
        widened += lo <= true_rate <= hi
    assert 2.0 < float(np.median(phis)) < 4.0  # 1 + 2 errors a burst second × 0.9
    assert plain < 330 and widened >= 360, (plain, widened)  # of 400: nominal 380
    # independent errors: no wider than binomial (the floor), and about as often
    assert dispersion([(100, int(b)) for b in rng.binomial(100, 0.002, 60)]) < 1.6
    assert dispersion([(100, 0)] * 10) == 1.0 and dispersion([(100, 1)]) == 1.0


def test_a_step_with_slow_answers_in_bursts_is_not_shown_to_hold():
    """A p99<=30ms step whose slowest answers came in a few bursty seconds (as measured
    on this machine near a CPU-bound query's capacity): taken as independent requests it
    holds; the step's looks see the bursts and leave it undecided, and the step line says
    the interval is wider for them. The clustering is that of the answers beyond the
    step's own p99, so it shows even when none came near the limit."""
    from chbench.load.capacity import CapacityStep, _Looks, step_line
    from chbench.load.recorder import Stats

    class Search:
        slos = [parse_slo("p99<=30ms")]
        steps: list = []

        def on_progress(self, p):
            pass

    def step(slow_ms: float, slow_seconds: tuple[int, ...], seconds: int, rate: int,
             slow_per_second: int = 0) -> tuple[_Looks, Stats]:
        looks = _Looks(Search(), float(rate), float(seconds))  # type: ignore[arg-type]
        total = Stats()
        for second in range(seconds):
            st = Stats()
            for i in range(rate):
                st.hist.record(slow_ms if second in slow_seconds and i < (slow_per_second or rate // 10) else 8.0)
            st.queries = rate
            looks.interval(0, {}, {0: st}, 1.0, {}, float(second))
            total.merge(st)
        return looks, total

    # 0.5% beyond the limit in 3 of 60 s; 1% at 20 ms (none beyond 30) in 2 of 20 s
    for slow_ms, slow, seconds, rate in ((40.0, (22, 25, 41), 60, 180), (20.0, (5, 12), 20, 90)):
        looks, total = step(slow_ms, slow, seconds, rate)
        n = seconds * rate
        bursty_step = CapacityStep(rate, total, seconds, n, n, 0, intervals=looks.intervals)
        phi = bursty_step.dispersion(99)
        assert phi > 5, (slow_ms, phi)
        independent = CapacityStep(rate, total, seconds, n, n, 0).judged(Search.slos)[0]
        assert independent["verdict"] == "holds" and independent["dispersion"] == 1.0
        bursty = bursty_step.judged(Search.slos)[0]
        assert bursty["verdict"] == "undecided" and bursty["dispersion"] == round(phi, 2), (slow_ms, bursty)
        entry = bursty_step.entry(Search.slos)
        assert "in bursts" in step_line(entry)
        assert entry["p99_ci"] == bursty["ci"]  # the report's p99 interval is the SLO's
    looks, total = step(20.0, tuple(range(18)), 20, 90, slow_per_second=1)  # as many, spread evenly
    assert CapacityStep(90.0, total, 20, 1800, 1800, 0, intervals=looks.intervals).dispersion(99) == 1.0


def test_progress_after_a_look_shows_the_step_as_it_stands():
    """Between looks the progress line judges the requests so far, not the last look's
    (seen: the same "[5.62, inf]" repeated 6 s later on a real search)."""
    from chbench.load.capacity import _Looks, progress_line
    from chbench.load.recorder import Stats

    class Search:
        slos = [parse_slo("errors<=0.1%")]
        steps: list = []
        lines: list[str] = []

        def on_progress(self, p):
            self.lines.append(progress_line(p))

    search = Search()
    looks = _Looks(search, 100.0, 10.0)  # type: ignore[arg-type]
    st = Stats()
    for t, n in ((10.0, 1_000), (15.0, 1_500)):  # a full look at 10 s (undecided), progress at 15 s
        st.errors, st.queries = 1, n - 1
        assert not looks.decided({(0, 0): st}, {"due": n, "started": n}, t)
    at_look, between = search.lines
    assert "1,000 requests" in at_look and "errors<=0.1% 0.001 [" in at_look
    assert "1,500 requests" in between and "errors<=0.1% 0.000667 [" in between  # 1 of 1,500
