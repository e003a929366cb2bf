"""``chbench load --slo``: the capacity under an SLO, against a server whose capacity the
test builds (a query of known length on a known number of connections), and the
statistics it decides with."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scipy import stats as sps

from chbench.errors import UsageError
from chbench.load.capacity import parse_slo, samples_to_decide
from chbench.stats.histogram import Histogram
from chbench.stats.quantile import percentile_interval, rate_interval
from tests.conftest import assert_one_line_error, load, run_cli
from tests.engines import ModernServer


def test_slo_spellings() -> None:
    assert parse_slo("p99<=200ms").percentile == 99 and parse_slo("p99<=200ms").limit == 200
    assert parse_slo(" p99.9 <= 1s ").limit == 1000 and parse_slo("p50<=500us").limit == 0.5
    assert parse_slo("errors<=0.1%").percentile is None and parse_slo("errors<=0.1%").limit == pytest.approx(0.001)
    for bad in ("p99<200ms", "latency<=1s", "p100<=1ms", "errors<=lots"):
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
    assert set(cap) >= {"rate", "ci", "broken_at", "slo", "steps"}
    first = cap["steps"][0]
    known = 2 / (first["p50_ms"] / 1000.0)  # the service time, measured where nothing queues
    assert 0.85 * known <= cap["rate"] <= 1.05 * known, (cap["rate"], known)
    assert cap["ci"][0] == cap["rate"] and cap["ci"][1] > cap["rate"] and cap["broken_at"] >= cap["ci"][1]
    assert any(s["verdict"] == "breaks" for s in cap["steps"]) and all(
        s["verdict"] == "holds" for s in cap["steps"] if s["offered_qps"] <= cap["rate"])
    assert [x["slo"] for x in cap["slo"]] == ["p99<=100ms", "errors<=1%"]
    assert r.stdout.strip().splitlines()[-1] == r.stderr.strip().splitlines()[-1] == f"capacity: {cap['rate']:.1f} QPS"
    doc = load(out)
    assert len(doc["levels"]) >= len(cap["steps"])  # every run of every step kept, histograms and all
    assert run_cli("report", str(out), "--html", str(html)).code == 0
    assert "Capacity under p99&lt;=100ms" in html.read_text() or "Capacity under p99<=100ms" in html.read_text()
