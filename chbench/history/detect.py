"""Where a series' level changed: pure numbers, no store (docs/history.md, "Finding changes").

The input is one query's series — the log of each run's median, the machine's factor
already taken out (``series.py``) — in run order. The method:

1. **Noise**: the run-to-run sd from successive differences (outlying ones left out),
   taken at its 95% upper bound (``noise_sd``).
2. **Spikes**: a run beyond ``SPIKE_SDS`` sds of both its neighbours and both local levels,
   the same way, is a one-run spike: left out, never an alert. The newest run, when it
   lies that far from the run before and the level before, may be a spike or a step's
   first run: it waits for the next run (``pending``).
3. **Steps**: binary segmentation — the split of a segment that maximises the standardised
   difference of the two sides' means, kept when it exceeds ``Z_DETECT`` and each side has
   at least two runs, then every kept split re-tested against its neighbours' (the merge
   step Otava and E-divisive use). ``Z_DETECT`` was set on the seeded series of
   bench/history_bars.py: it controls false alerts over every split point and every check
   of a growing series (one look per new run), not a single test.
4. **Creep**: over the newest stretch, "a level, then a line from some run on" (a hinge,
   the slope by Theil–Sen with its 99.9% interval), when it fits better (BIC) than the
   stretch's best single step and than the steps found in it: a slow change reported as a
   trend with its rate per week, not as a string of small steps.

Each step found here is a *candidate*: ``check.py`` confirms it on the raw samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MIN_RUNS = 8  # a series shorter than this shows no change: 6 runs at the old level, 2 at the new
MIN_SEGMENT = 2  # runs on each side of a step: one run alone is never a level
SPIKE_SDS = 3.5
Z_DETECT = 4.5
TREND_CONF = 0.999
CREEP_WINDOW = 120  # runs: a creep is looked for in the newest stretch only
MIN_NOISE = 0.002  # a floor under the estimated sd (0.2%): medians of 10+ runs are never exact


@dataclass
class LevelStep:
    index: int  # position in the series of the first run at the new level
    log_size: float  # the new level minus the old (means, log)
    z: float
    left: int  # the segment before: [left, index)
    right: int  # the segment after: [index, right)


@dataclass
class Trend:
    start: int  # first run of the creep
    end: int  # one past its last run
    log_per_day: float
    lo_per_day: float
    hi_per_day: float

    @property
    def per_week(self) -> float:
        return math.expm1(7 * self.log_per_day)


@dataclass
class Detection:
    sigma: float
    steps: list[LevelStep] = field(default_factory=list)
    spikes: list[int] = field(default_factory=list)
    pending: int | None = None  # the newest run, waiting for the next to tell spike from step
    trend: Trend | None = None
    too_short: bool = False


def noise_sd(y: np.ndarray) -> float:
    """The run-to-run sd: from successive differences (a step or a spike moves one or two
    of them), those beyond 4 robust sds left out, then the rest's sd (a plain sd is 2.5×
    as efficient as the MAD: measured, the MAD of 36 differences put one query's sd at
    0.65× its true value and made a 3% wiggle a 5-sd step), and finally its one-sided 95%
    upper bound for the differences' degrees of freedom — an sd guessed low is a false
    alert, one guessed high a change seen a run later."""
    from scipy import stats as sps

    if len(y) < 3:
        return MIN_NOISE
    d = np.diff(y)
    mad = 1.4826 * float(np.median(np.abs(d)))
    kept = d[np.abs(d) <= 4 * mad] if mad > 0 else d
    df = max(1, len(kept))
    sd = math.sqrt(float(np.sum(kept ** 2)) / df / 2)
    return max(MIN_NOISE, sd * math.sqrt(df / float(sps.chi2.ppf(0.05, df))))


def find_spikes(y: np.ndarray, sigma: float) -> tuple[list[int], int | None]:
    """One-run spikes (interior runs), and whether the newest run must wait."""
    n, lim = len(y), SPIKE_SDS * sigma
    spikes: list[int] = []
    # only runs beyond the limit from both neighbours the same way can be spikes
    d_prev, d_next = y[1:-1] - y[:-2], y[1:-1] - y[2:]
    near = np.flatnonzero((np.abs(d_prev) > lim) & (np.abs(d_next) > lim) & (d_prev * d_next > 0)) + 1
    for i in (int(k) for k in near):
        left = float(np.median(y[max(0, i - 5):i]))
        right = float(np.median(y[i + 1:i + 4]))
        dev = (y[i] - y[i - 1], y[i] - y[i + 1], y[i] - left, y[i] - right)
        if all(abs(d) > lim for d in dev) and (all(d > 0 for d in dev) or all(d < 0 for d in dev)):
            spikes.append(i)
    pending = None
    if n >= 2:
        kept = [j for j in range(n - 1) if j not in spikes]
        left = float(np.median(y[kept[-5:]])) if kept else float(y[-2])
        last = float(y[-1])
        if abs(last - y[kept[-1] if kept else -2]) > lim and abs(last - left) > lim:
            pending = n - 1
    return spikes, pending


def _best_split(y: np.ndarray) -> tuple[int, float]:
    """The split k (left = y[:k]) maximising the standardised difference of means (unit sd)."""
    m = len(y)
    c = np.cumsum(y)
    k = np.arange(MIN_SEGMENT, m - MIN_SEGMENT + 1)
    left = c[k - 1] / k
    right = (c[-1] - c[k - 1]) / (m - k)
    z = np.abs(right - left) / np.sqrt(1.0 / k + 1.0 / (m - k))
    j = int(np.argmax(z))
    return int(k[j]), float(z[j])


def segment(y: np.ndarray, sigma: float, z_crit: float = Z_DETECT) -> list[int]:
    """Binary segmentation, then the merge step: the split points (indices into ``y``)."""
    cps: list[int] = []
    todo = [(0, len(y))]
    while todo:
        s, e = todo.pop()
        if e - s < 2 * MIN_SEGMENT:
            continue
        k, z = _best_split(y[s:e])
        if z / sigma > z_crit:
            cps.append(s + k)
            todo += [(s, s + k), (s + k, e)]
    cps.sort()
    while True:  # merge: each split against its neighbours' segments, the weakest first
        bounds = [0, *cps, len(y)]
        zs = [_z(y[bounds[i]:bounds[i + 1]], y[bounds[i + 1]:bounds[i + 2]], sigma) for i in range(len(cps))]
        if not zs or min(zs) > z_crit:
            return cps
        cps.pop(int(np.argmin(zs)))


def _z(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    return abs(float(b.mean() - a.mean())) / (sigma * math.sqrt(1 / len(a) + 1 / len(b)))


def detect(y: np.ndarray, days: np.ndarray | None = None, z_crit: float = Z_DETECT,
           min_trend: float = 0.02, creep: bool = True) -> Detection:
    """Steps, spikes and a creep in one series (``days``: each run's time, for a creep's
    rate; ``min_trend``: the least total change a creep must make to be one; ``creep=False``:
    steps only)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    sigma = noise_sd(y)
    if n < MIN_RUNS:
        return Detection(sigma, too_short=True)
    spikes, pending = find_spikes(y, sigma)
    keep = np.array([i for i in range(n) if i not in spikes and i != pending])
    cps = segment(y[keep], sigma, z_crit)
    bounds = [0, *cps, len(keep)]
    out = Detection(sigma, spikes=spikes, pending=pending)
    for i, cp in enumerate(cps):
        a, b = y[keep[bounds[i]:cp]], y[keep[cp:bounds[i + 2]]]
        out.steps.append(LevelStep(index=int(keep[cp]), log_size=float(b.mean() - a.mean()), z=_z(a, b, sigma),
                              left=int(keep[bounds[i]]), right=int(keep[bounds[i + 2] - 1]) + 1))
    if creep:
        t = np.arange(n, dtype=float) if days is None else np.asarray(days, dtype=float)
        out.trend = _creep(y[keep], t[keep], keep, out, min_trend)
    return out


def _creep(y: np.ndarray, t: np.ndarray, keep: np.ndarray, det: Detection, min_trend: float) -> Trend | None:
    """A slow change over the newest stretch (since the last step that is not part of a
    run of same-direction steps at the end): a level, then a line from some run on (a
    "hinge"; from the stretch's first run it is a plain line). It must fit better (BIC)
    than the best single step and than the steps found, the line's 99.9% slope interval
    (Theil–Sen) exclude 0, and its total change reach twice ``min_trend``."""
    from scipy import stats as sps

    tail: list[LevelStep] = []
    for st in reversed(det.steps):
        if tail and np.sign(st.log_size) != np.sign(tail[0].log_size):
            break
        tail.insert(0, st)
    start = int(np.searchsorted(keep, tail[0].left)) if tail else 0
    start = max(start, len(y) - CREEP_WINDOW)
    yy, tt = y[start:], t[start:]
    n = len(yy)
    if n < 3 * MIN_RUNS // 2 or tt[-1] <= tt[0]:
        return None
    h, rss_hinge = _hinge(yy, tt)
    if n - h < MIN_RUNS:
        return None
    res = sps.theilslopes(yy[h:], tt[h:], alpha=TREND_CONF)
    slope, lo, hi = float(res.slope), float(res.low_slope), float(res.high_slope)
    if lo <= 0 <= hi or abs(slope * (tt[-1] - tt[h])) < math.log1p(2 * min_trend):
        return None
    k, _ = _best_split(yy)
    rss_one = float(np.sum((yy[:k] - yy[:k].mean()) ** 2) + np.sum((yy[k:] - yy[k:].mean()) ** 2))
    inner = sorted({c for st in tail if 0 < (c := int(np.searchsorted(keep, st.index)) - start) < n})
    cuts = [0, *inner, n]
    rss_found = float(sum(np.sum((yy[a:b] - yy[a:b].mean()) ** 2) for a, b in zip(cuts[:-1], cuts[1:], strict=True)))

    def bic(rss: float, params: int) -> float:  # a hinge: level, slope, place; k steps: k + 1 levels, k places
        return n * math.log(max(rss, 1e-12) / n) + params * math.log(n)

    if bic(rss_hinge, 3) >= min(bic(rss_one, 3), bic(rss_found, 1 + 2 * len(inner)) if inner else math.inf):
        return None
    return Trend(start=int(keep[start + h]), end=int(keep[-1]) + 1, log_per_day=slope, lo_per_day=lo, hi_per_day=hi)


def _hinge(y: np.ndarray, t: np.ndarray) -> tuple[int, float]:
    """The best "level, then a line from run h on" fit by least squares: h and its RSS."""
    best = (0, math.inf)
    for h in range(0, len(y) - MIN_RUNS + 1):
        x = np.maximum(0.0, t - t[h])
        design = np.column_stack([np.ones_like(x), x])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        rss = float(np.sum((y - design @ coef) ** 2))
        if rss < best[1]:
            best = (h, rss)
    return best
