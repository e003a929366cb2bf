"""Describing one side's samples: medians, intervals and what makes them unreliable."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np


def median_ci(values: Sequence[float], conf: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median (order statistics)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    if n < 6:
        return (float(x[0]), float(x[-1]))
    lo = _median_rank(n, conf)
    return (float(x[lo]), float(x[n - 1 - lo]))


@lru_cache(maxsize=4096)
def _median_rank(n: int, conf: float) -> int:
    """Smallest symmetric pair of order statistics covering the median with prob >= conf.

    The binomial quantile ``scipy.stats.binom.ppf((1 - conf) / 2, n, 0.5)``, computed
    exactly with integers (tests/test_stats.py checks it against scipy): importing
    scipy.stats takes ~2.7 s on the reference machine, and ``chbench run`` needs nothing
    else from it — every run would pay that to start."""
    q = (1 - conf) / 2
    total = 1 << n
    acc = 0
    for k in range(n + 1):
        acc += math.comb(n, k)
        if acc / total >= q:
            return max(k - 1, 0)
    return max(n - 1, 0)


def relative_ci_halfwidth(values: Sequence[float], conf: float = 0.95) -> float:
    """Half the width of the median's interval, relative to the median."""
    if len(values) < 2:
        return math.inf
    lo, hi = median_ci(values, conf)
    med = float(np.median(values))
    return (hi - lo) / 2 / med if med > 0 else math.inf


def rel_mad(values: Sequence[float]) -> float:
    """Median absolute deviation relative to the median: a robust run-to-run spread."""
    x = np.asarray(values, dtype=float)
    med = float(np.median(x))
    return float(np.median(np.abs(x - med)) / med) if med > 0 else 0.0


def percentiles(values: Sequence[float]) -> dict[str, float]:
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return {}
    p = np.percentile(x, [0, 10, 50, 90, 99, 100])
    return {
        "min": float(p[0]),
        "p10": float(p[1]),
        "median": float(p[2]),
        "p90": float(p[3]),
        "p99": float(p[4]),
        "max": float(p[5]),
        "mean": float(x.mean()),
    }


def drift(values: Sequence[float], beyond: float = 0.0) -> tuple[float, float]:
    """Trend over run order: (relative change from first to last run, p-value).

    Theil–Sen slope over the run index (the median of every pair's slope: robust to
    outliers), tested with Kendall's tau only for a change beyond ``beyond`` (p 1.0
    otherwise: callers ask only about such). scipy's ``theilslopes`` and ``kendalltau``
    took 1.8 ms a call, 38% of a simulated comparison; this takes 0.09 ms where the
    change is within ``beyond``, with the same answers."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 8:
        return (0.0, 1.0)
    i, j = np.triu_indices(n, 1)
    slope = float(np.median((x[j] - x[i]) / (j - i)))
    med = float(np.median(x))
    change = slope * (n - 1) / med if med > 0 else 0.0
    if abs(change) <= beyond:
        return (float(change), 1.0)
    from scipy import stats as sps

    return (float(change), float(sps.kendalltau(np.arange(n), x).pvalue))


def bimodal(values: Sequence[float]) -> bool:
    """Two well separated clusters of runs, each holding at least a fifth of them."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n < 10:
        return False
    gaps = np.diff(x)
    i = int(np.argmax(gaps))
    left, right = x[: i + 1], x[i + 1 :]
    if min(len(left), len(right)) < max(2, n // 5):
        return False
    spread = max(np.subtract(*np.percentile(left, [75, 25])), np.subtract(*np.percentile(right, [75, 25])))
    return bool(gaps[i] > 0.08 * np.median(x) and gaps[i] > 4 * spread)


def instability_reasons(values: Sequence[float], threshold: float, min_runs: int = 5,
                        ordered: bool = True) -> list[str]:
    """Why this side's runs cannot tell a threshold-sized change from noise (empty: fine).
    Not ``ordered`` (a replay's queries, different literals in the workload's order): only
    their number, as two clusters or a trend among them is the workload's own."""
    reasons = []
    n = len(values)
    if n < min_runs:
        return [f"too few runs ({n} < {min_runs})"]
    if not ordered:
        return []
    if bimodal(values):
        reasons.append("bimodal run times")
    change, p = drift(values, threshold)
    if p < 0.01 and abs(change) > threshold:
        reasons.append(f"drifting over the run ({change:+.0%} from first to last run)")
    return reasons
