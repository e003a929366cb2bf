"""Paired analysis of side-by-side runs (docs/statistics.md, "Side by side: paired").

A side-by-side run measures A and B of a query back to back in every round (A B in
even rounds, B A in odd ones). The machine's state drifts over seconds, so most of its
noise is shared by the two runs of a round and cancels in their ratio: measured here,
the per-round log ratio log(B_r / A_r) spread 2–6% where each side alone spread 6–17%.
The unit of the analysis is therefore the round's log ratio ``d_r``:

* the typical ratio is the Hodges–Lehmann estimate of ``d`` (the median of all pairwise
  means of the ``d_r``, Walsh averages), exponentiated;
* its 95% interval is the distribution-free one that goes with the signed-rank test
  (order statistics of the Walsh averages, exact critical values up to 60 pairs, the
  normal approximation above);
* the test is Wilcoxon's signed-rank test on the ``d_r`` (scipy, exact where it can be).

Both assume only that the ``d_r`` are independent and symmetric about the typical value:
rank-based, so one round disturbed by a burst moves the estimate by one rank, not by its
size. An order effect (the second run of a round faster, caches warmed by the first) is
balanced by the alternation; when the two orders' ratios differ significantly it is
estimated and taken out of each round (``order_effect``), so it does not widen the
interval. Rounds where one side failed have no pair and are left out (counted).

This module needs numpy only: the runner's adaptive rule calls :func:`hl_interval`
after every round, and importing ``scipy.stats`` costs seconds (stats/summary.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

Z95 = 1.959963984540054
EXACT_MAX = 60  # exact signed-rank critical values up to this many pairs
ORDER_P = 0.01  # an order effect is taken out when the two orders differ this significantly
# The fewest pairs a paired verdict is drawn from: with 5 no 95% signed-rank interval
# exists (even T = 0 has probability 1/32) and the test's smallest two-sided p is 0.0625,
# so a query measured 5 times a side (a slow query at its time budget) could never be
# decided — seen: 18.16 against 26.9, ×2,600 in all 5 rounds, `unstable [-100%, +∞]`.
# With 6, P(T = 0) = 1/64 and the interval exists. Fewer: judged on the pooled runs.
MIN_PAIRS = 6


def rounds_to_show_a_change(tests: int, alpha: float = 0.05) -> int:
    """The fewest paired rounds whose smallest exact signed-rank p (2 / 2^n: every round the
    same way) passes Holm's first step over ``tests`` tests, alpha / tests (stats/compare.py;
    N sides: split across the compared pairs too). One test: 6; ten queries: 9."""
    return max(MIN_PAIRS, math.ceil(1 + math.log2(tests / alpha) - 1e-9))


@lru_cache(maxsize=256)
def signed_rank_lower(n: int, conf: float = 0.95) -> int:
    """The largest ``c`` with P(T ≤ c) ≤ (1 − conf)/2 under the null, T the signed-rank
    statistic of ``n`` pairs (−1 when even T = 0 is more likely than that): the interval
    is then Walsh averages ``c + 1`` … ``M − c`` (1-based, M = n(n+1)/2)."""
    q = (1 - conf) / 2
    if n > EXACT_MAX:  # the normal approximation, at this ``conf`` (bisect asks 99%)
        mean = n * (n + 1) / 4
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        z = Z95 if conf == 0.95 else NormalDist().inv_cdf(1 - q)
        return max(-1, math.floor(mean - z * sd - 0.5))
    top = n * (n + 1) // 2
    counts = [0] * (top + 1)  # subsets of {1..n} by their sum
    counts[0] = 1
    for k in range(1, n + 1):
        for s in range(top, k - 1, -1):
            counts[s] += counts[s - k]
    total = 1 << n
    acc = 0
    for c in range(top + 1):
        acc += counts[c]
        if acc / total > q:
            return c - 1
    return top


# Above this many values the Walsh averages are not built: n(n+1)/2 of them took 41 ms
# to sort at 1,000 rounds, after every round of the runner's adaptive check (between
# two timed queries); counting them instead takes ~5 ms there (walsh_order_stats)
MATERIALISE_MAX = 300


def walsh_order_stats(d: np.ndarray, ranks: list[int]) -> list[float]:
    """The Walsh averages (d_i + d_j)/2, i ≤ j, at the given 0-based ranks of their
    sorted order. Small inputs: built and partitioned. Large ones: each found by
    bisection on its value, counting the averages ≤ t with one ``searchsorted`` over
    the sorted values (O(n log n) a step), to float precision."""
    x = np.sort(np.asarray(d, dtype=float))
    n = len(x)
    if n <= MATERIALISE_MAX:
        i, j = np.triu_indices(n)
        w = np.partition((x[i] + x[j]) / 2.0, sorted(set(ranks)))
        return [float(w[k]) for k in ranks]
    below_i = np.arange(n)

    def count(t: float) -> int:  # how many Walsh averages are <= t
        return int(np.maximum(0, np.searchsorted(x, 2 * t - x, side="right") - below_i).sum())

    out = []
    for k in ranks:
        lo, hi = float(x[0]), float(x[-1])
        for _ in range(64):  # halvings down to float precision
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if count(mid) >= k + 1:
                hi = mid
            else:
                lo = mid
        out.append(hi)
    return out


def hl_interval(d: list[float] | np.ndarray, conf: float = 0.95) -> tuple[float, float, float]:
    """Hodges–Lehmann estimate of the centre of ``d`` and its distribution-free interval
    (low, high); with too few values for the interval at ``conf``, the whole range."""
    x = np.asarray(d, dtype=float)
    if len(x) == 0:
        return math.nan, -math.inf, math.inf
    m = len(x) * (len(x) + 1) // 2
    c = signed_rank_lower(len(x), conf)
    ranks = [(m - 1) // 2, m // 2] + ([c, m - 1 - c] if c >= 0 else [])
    w = walsh_order_stats(x, ranks)
    centre = (w[0] + w[1]) / 2
    if c < 0:
        return centre, -math.inf, math.inf
    return centre, w[2], w[3]


@dataclass(frozen=True)
class Pairs:
    """A query's rounds where both sides succeeded: the log ratios in round order, and
    whether A ran first in each."""

    d: np.ndarray
    a_first: np.ndarray
    unpaired_a: int  # successful runs of A without a successful B in their round
    unpaired_b: int

    def __len__(self) -> int:
        return len(self.d)


def pair_up(a: list[tuple[tuple[int, int], float]], b: list[tuple[tuple[int, int], float]],
            first: dict[tuple[int, int], bool] | None = None) -> Pairs:
    """Match A's and B's successful runs by (session, round). Who ran first: ``first``
    (from the runs' start times), else the round's parity — in a two-sided run A runs
    first in even rounds (core.schedule.round_order); with three or more sides only the start
    times tell."""
    bmap = dict(b)
    amap = dict(a)
    keys = [k for k, _ in a if k in bmap and amap[k] > 0 and bmap[k] > 0]
    d = np.array([math.log(bmap[k]) - math.log(amap[k]) for k in keys], dtype=float)
    a_first = np.array([first[k] if first and k in first else k[1] % 2 == 0 for k in keys], dtype=bool)
    return Pairs(d, a_first, len(a) - len(keys), len(b) - len(keys))


@dataclass(frozen=True)
class PairedResult:
    """What the paired analysis found for one query (log scale where it says log)."""

    pairs: int
    log_ratio: float  # Hodges–Lehmann estimate
    log_lo: float
    log_hi: float
    p_value: float  # Wilcoxon signed-rank, two-sided
    spread: float  # robust sd of the per-round log ratios (1.4826 × MAD)
    order_effect: float | None  # half the difference A-first minus B-first (log), when taken out
    order_p: float | None
    unpaired_a: int
    unpaired_b: int
    drift: tuple[float, float]  # (change of the ratio from first to last round, p; 1.0 within the threshold)

    def to_json(self) -> dict[str, object]:
        return {
            "pairs": self.pairs, "ratio": math.exp(self.log_ratio),
            "ci": [finite_or_none(math.exp(self.log_lo)), finite_or_none(math.exp(self.log_hi))],
            "p_value": self.p_value, "spread": finite_or_none(self.spread),
            "order_effect": None if self.order_effect is None else math.expm1(self.order_effect),
            "order_p": self.order_p, "unpaired_runs": [self.unpaired_a, self.unpaired_b],
        }


def finite_or_none(v: float) -> float | None:
    """For JSON, which has no infinity: an interval's end no data could bound is null."""
    return float(v) if math.isfinite(v) else None


def order_adjusted(p: Pairs) -> tuple[np.ndarray, float | None, float | None]:
    """The log ratios with a significant order effect taken out, the effect (half the
    difference between A-first and B-first rounds, log) and its Mann–Whitney p."""
    ab, ba = p.d[p.a_first], p.d[~p.a_first]
    if len(ab) < 3 or len(ba) < 3:
        return p.d, None, None
    from scipy import stats as sps

    order_p = float(sps.mannwhitneyu(ab, ba, alternative="two-sided").pvalue)
    if order_p >= ORDER_P:
        return p.d, None, order_p
    effect = (float(np.median(ab)) - float(np.median(ba))) / 2.0
    return np.where(p.a_first, p.d - effect, p.d + effect), effect, order_p


def analyse(p: Pairs, threshold: float = 0.0) -> PairedResult:
    """The typical ratio, its interval and the signed-rank test of one query's pairs;
    their trend's p only for a change beyond ``threshold`` (``summary.drift``)."""
    from scipy import stats as sps

    from chbench.stats.summary import drift

    d, effect, order_p = order_adjusted(p)
    centre, lo, hi = hl_interval(d)
    nonzero = d[d != 0]
    pv = float(sps.wilcoxon(nonzero).pvalue) if len(nonzero) >= 1 else 1.0
    med = float(np.median(d))
    spread = 1.4826 * float(np.median(np.abs(d - med)))
    # the ratio series' own trend: a change that grows over the run is not one number
    change, dp = drift(list(np.exp(d)), threshold) if len(d) >= 8 else (0.0, 1.0)
    return PairedResult(len(d), centre, lo, hi, pv if math.isfinite(pv) else 1.0, spread, effect, order_p,
                        p.unpaired_a, p.unpaired_b, (change, dp))


def bootstrap(d: np.ndarray, rng: np.random.Generator, reps: int = 2000) -> np.ndarray:
    """Replicates of the typical log ratio (median of resampled rounds), for the
    geometric mean's interval and the common shift."""
    if len(d) == 0:
        return np.zeros(reps)
    return resampled_medians(d, rng, reps)


def resampled_medians(x: np.ndarray | list[float], rng: np.random.Generator, reps: int) -> np.ndarray:
    """``np.median(x[rng.integers(0, n, (reps, n))], axis=1)``, the same numbers from the
    same draws: the drawn positions are mapped to their ranks in ``x`` and sorted as
    integers, and the median read from ``x`` sorted once. Measured (15 runs, 2,000
    replicates): 0.46 ms against 0.98 ms; at 100 runs the two are alike (5.3 and 5.8 ms)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    order = np.argsort(x, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    drawn = rank[rng.integers(0, n, (reps, n))]
    drawn.sort(axis=1)
    ordered = x[order]
    out: np.ndarray = ordered[drawn[:, n // 2]]
    if n % 2 == 0:
        out = (ordered[drawn[:, n // 2 - 1]] + out) / 2
    return out
