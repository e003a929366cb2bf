"""Which of several client paths is fastest, and by how much (docs/statistics.md,
"Client paths: the fastest and by how much").

``ingest`` and ``read`` measure every path once per round, the paths in a rotated order
(round r starts at the r-th path), so each round's times were taken within seconds of
each other on the same machine. The unit is the round: for two paths the log ratio of
their times in each round where both succeeded, ``d_r = log(t_other / t_leader)``; the
typical ratio is ``exp(mean d)`` and its interval Student's t on the ``d_r``. A handful
of rounds (3 by default) is too few for a distribution-free interval (the signed-rank
one needs 6 pairs for 95%), and on the log scale a path's run-to-run noise is close to
symmetric. Pairing takes out what the machine did to a whole round, as in the paired
analysis of side-by-side runs (stats/paired.py).

Three rounds give a pair's own variance 2 degrees of freedom: t's quantile at the level
below is then 11.8 for 7 paths (3.2 with 12 degrees of freedom). With three paths or
more the noise is pooled instead, as the separate-run analysis pools it across queries
(stats/rounds.py): a two-way model, path ×
round, on the log times, whose residual variance has (k − 1)(n − 1) degrees of freedom;
the pair's own variance stays a floor, so a path noisier than the rest keeps a wider
interval. Seeded (7 paths, 3 rounds): every path 1.3× slower than the leader told apart
in 85% of runs, against 0.15% on the pair's own variance alone.

The leader is the path with the shortest median time. Another path is *behind* when its
ratio's interval lies above 1, else *within noise* of the leader: then "the fastest"
is one of them and the report says so. One round gives no interval at all. Choosing the
leader as the fastest of the rounds biases every comparison its way, so each interval
is taken at 1 − 0.05/k for k paths. Seeded, all paths equal, a shared round factor (10%)
and 5% noise a path, 2,000 runs each: the headline ("X is the fastest": the nearest path
behind) in 2.1% with 2 paths and 0% with 7 or 12; any path called behind in 2.1–6.8% (2–12
paths, 3 or 5 rounds); one path with 3× the others' noise called behind in 3.8%.
tests/test_ranking.py checks these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from chbench.stats.summary import rel_mad

CONF = 0.95
T = TypeVar("T")


@dataclass(frozen=True)
class Gap:
    """How much longer ``other`` took than the leader: the typical ratio of times
    (= how many times the leader's throughput), its interval, the rounds paired."""

    other: str
    ratio: float
    ci: tuple[float, float] | None  # None: fewer than 2 paired rounds
    rounds: int

    @property
    def behind(self) -> bool:
        return self.ci is not None and self.ci[0] > 1.0

    def to_json(self) -> dict[str, object]:
        return {"path": self.other, "ratio": round(self.ratio, 4),
                "ci": None if self.ci is None else [round(self.ci[0], 4), round(self.ci[1], 4)],
                "rounds": self.rounds, "behind": self.behind}


def gap(leader: list[float | None], other: list[float | None], name: str = "", conf: float = CONF,
        pooled: tuple[float, int] | None = None) -> Gap | None:
    """The paired ratio other/leader over the rounds where both have a time, with its
    interval at ``conf``; None when no round has both. ``pooled``: (variance of one log
    time, its degrees of freedom) from every path's rounds (:func:`pooled_noise`), a floor
    under the pair's own variance that lends it its degrees of freedom."""
    d = np.array([math.log(o / a) for a, o in zip(leader, other, strict=False)
                  if a is not None and o is not None and a > 0 and o > 0])
    if len(d) == 0:
        return None
    mean = float(d.mean())
    if len(d) < 2:
        return Gap(name, math.exp(mean), None, 1)
    var, df = float(d.var(ddof=1)), len(d) - 1
    if pooled is not None:
        var, df = max(var, 2 * pooled[0]), pooled[1]
    from scipy import stats as sps  # only here: importing it costs ~2 s (stats/summary.py)

    half = float(sps.t.ppf(0.5 + conf / 2, df)) * math.sqrt(var / len(d))
    return Gap(name, math.exp(mean), (math.exp(mean - half), math.exp(mean + half)), len(d))


def pooled_noise(times: dict[str, list[float | None]]) -> tuple[float, int] | None:
    """The residual variance of one log time in a two-way model, path × round, over the
    rounds every path has a time in, and its degrees of freedom (k − 1)(n − 1); None with
    fewer than 3 paths or 2 such rounds (then each pair stands on its own)."""
    rows = list(times.values())
    full = [r for r in range(min(map(len, rows), default=0))
            if all((t := v[r]) is not None and t > 0 for v in rows)]
    k, n = len(rows), len(full)
    if k < 3 or n < 2:
        return None
    x = np.log(np.array([[v[r] for r in full] for v in rows], dtype=float))
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    df = (k - 1) * (n - 1)
    return float((resid ** 2).sum()) / df, df


def round_summary(tries: list[float]) -> dict[str, float]:
    """A path's times over its rounds, as its row shows them: the median, the best and
    the spread (relative MAD)."""
    return {"seconds": float(np.median(tries)), "best_seconds": min(tries), "spread": rel_mad(tries)}


def median_time(times: list[float | None]) -> float | None:
    ok = [t for t in times if t is not None]
    return float(np.median(ok)) if ok else None


@dataclass(frozen=True)
class Ranking:
    leader: str
    gaps: list[Gap]  # every other path with a time, nearest first

    @property
    def tied(self) -> list[Gap]:
        """Paths the rounds cannot tell from the leader."""
        return [g for g in self.gaps if not g.behind]

    def to_json(self) -> dict[str, object]:
        return {"leader": self.leader, "others": [g.to_json() for g in self.gaps],
                "tied": [g.other for g in self.tied]}


def rank(times: dict[str, list[float | None]]) -> Ranking | None:
    """``times[path][r]``: the path's seconds in round r (None: it failed that round).
    None when no path has a time."""
    medians = {k: m for k, v in times.items() if (m := median_time(v)) is not None}
    if not medians:
        return None
    leader = min(medians, key=lambda k: medians[k])
    conf = 1 - (1 - CONF) / len(medians)
    noise = pooled_noise({k: times[k] for k in medians})
    gaps = [g for k in medians if k != leader and (g := gap(times[leader], times[k], k, conf, noise)) is not None]
    return Ranking(leader, sorted(gaps, key=lambda g: g.ratio))


def rotated(names: list[T], r: int) -> list[T]:
    """Round r's order: starting at the r-th name, so each path runs early and late."""
    if not names:
        return []
    k = r % len(names)
    return names[k:] + names[:k]
