"""Confidence intervals for what an SLO is about: a latency percentile read off a
histogram, and an error rate.

A percentile's interval comes from order statistics, with no assumption about the
latency distribution: among n values, the rank of the p-th percentile is binomial, so
the interval runs from the value of rank ``binom.ppf(α/2, n, p)`` to the value of rank
``binom.ppf(1 − α/2, n, p) + 1`` (the standard distribution-free interval for a
quantile). Requests an open-loop run planned but never sent count as infinitely slow:
they are part of the sample, at its top. An error rate's interval is Clopper–Pearson
(exact binomial). Both are documented in docs/statistics.md."""

from __future__ import annotations

import math

from scipy import stats as sps

from chbench.stats.histogram import Histogram

CONFIDENCE = 0.95


def percentile_interval(hist: Histogram, p: float, never_sent: int = 0,
                        confidence: float = CONFIDENCE) -> tuple[float | None, float, float]:
    """(estimate, low, high) of the p-th percentile (0..100) in ms; ``never_sent``
    values are +inf. The estimate is None when there is no value at all."""
    n = hist.count + never_sent
    if n == 0:
        return None, 0.0, math.inf
    q = p / 100.0
    alpha = 1.0 - confidence
    lo_rank = int(sps.binom.ppf(alpha / 2, n, q))
    hi_rank = int(sps.binom.ppf(1 - alpha / 2, n, q)) + 1
    est_rank = max(1, math.ceil(q * n))
    low = hist.at_rank(lo_rank) if lo_rank >= 1 else 0.0
    high = hist.at_rank(hi_rank) if hi_rank <= n else math.inf
    return hist.at_rank(est_rank), low, high


def rate_interval(events: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(rate, low, high) of ``events`` in ``n`` trials, Clopper–Pearson."""
    if n == 0:
        return 0.0, 0.0, 1.0
    alpha = 1.0 - confidence
    low = 0.0 if events == 0 else float(sps.beta.ppf(alpha / 2, events, n - events + 1))
    high = 1.0 if events == n else float(sps.beta.ppf(1 - alpha / 2, events + 1, n - events))
    return events / n, low, high
