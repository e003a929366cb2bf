"""Confidence intervals for what an SLO is about: a latency percentile read off a
histogram, and an error rate.

A percentile's interval comes from order statistics, with no assumption about the
latency distribution: among n values, the rank of the p-th percentile is binomial, so
the interval runs from the value of rank ``binom.ppf(α/2, n, p)`` to the value of rank
``binom.ppf(1 − α/2, n, p) + 1`` (the standard distribution-free interval for a
quantile). Requests an open-loop run planned but never sent count as infinitely slow:
they are part of the sample, at its top. An error rate's interval is Clopper–Pearson
(exact binomial). Both assume independent requests; where the ones they count (errors,
answers beyond the percentile) come in bursts, ``dispersion`` says by how much, and both
intervals are taken over n / dispersion requests (a quasi-binomial design effect). All
documented in docs/statistics.md."""

from __future__ import annotations

import math

from scipy import stats as sps

from chbench.stats.histogram import Histogram

CONFIDENCE = 0.95


def percentile_interval(hist: Histogram, p: float, never_sent: int = 0, confidence: float = CONFIDENCE,
                        dispersion: float = 1.0) -> tuple[float | None, float, float]:
    """(estimate, low, high) of the p-th percentile (0..100) in ms; ``never_sent``
    values are +inf. The estimate is None when there is no value at all. With
    ``dispersion`` φ > 1 the ranks are those of n / φ values, scaled back to n."""
    n = hist.count + never_sent
    if n == 0:
        return None, 0.0, math.inf
    q = p / 100.0
    alpha = 1.0 - confidence
    m = max(1, round(n / max(dispersion, 1.0)))  # the sample's worth in independent values
    lo_rank = math.floor(sps.binom.ppf(alpha / 2, m, q) * n / m)
    hi_rank = math.ceil((sps.binom.ppf(1 - alpha / 2, m, q) + 1) * n / m)
    est_rank = max(1, math.ceil(q * n))
    low = hist.at_rank(lo_rank) if lo_rank >= 1 else 0.0
    high = hist.at_rank(hi_rank) if hi_rank <= n else math.inf
    return hist.at_rank(est_rank), low, high


def rate_interval(events: int, n: int, confidence: float = CONFIDENCE,
                  dispersion: float = 1.0) -> tuple[float, float, float]:
    """(rate, low, high) of ``events`` in ``n`` trials, Clopper–Pearson; with
    ``dispersion`` φ > 1, of events / φ in n / φ trials."""
    if n == 0:
        return 0.0, 0.0, 1.0
    alpha = 1.0 - confidence
    phi = max(dispersion, 1.0)
    e, m = events / phi, n / phi
    low = 0.0 if events == 0 else float(sps.beta.ppf(alpha / 2, e, m - e + 1))
    high = 1.0 if events == n else float(sps.beta.ppf(1 - alpha / 2, e + 1, m - e))
    return events / n, low, high


def pearson_dispersion(bins: list[tuple[int, int]]) -> float | None:
    """How much more than independent requests the bad ones cluster: Pearson's X² of the
    bad counts of successive intervals (seconds) against one constant rate, over its
    k − 1 degrees of freedom; ``bins`` holds (requests, bad requests) per interval. About
    1 when they are independent, below 1 when steadier than that; None when it cannot be
    told (fewer than two intervals with requests, no bad request or all bad)."""
    bins = [(n, b) for n, b in bins if n > 0]
    total, bad = sum(n for n, _ in bins), sum(b for _, b in bins)
    if len(bins) < 2 or bad == 0 or bad == total:
        return None
    p = bad / total
    return sum((b - n * p) ** 2 / (n * p * (1 - p)) for n, b in bins) / (len(bins) - 1)


def dispersion(bins: list[tuple[int, int]]) -> float:
    """The dispersion an SLO's interval is widened by: ``pearson_dispersion``, 1 where it
    cannot be told, and never below 1 (never narrower than the binomial interval)."""
    return max(1.0, pearson_dispersion(bins) or 1.0)
