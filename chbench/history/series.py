"""From stored runs to series: one per query (name + SQL hash), in run order, with the
machine's factor of each run taken out (docs/history.md, "The machine's factor").

Measured here (30 separate runs of a six-query suite, 2026-12-02): a query's median moved
6–13% (sd) from run to run, and 80–93% of that was shared by every query of the run —
the machine was faster or slower as a whole for minutes at a time (one stretch of six
runs +17%). Taken out, what is left of a query's own run-to-run noise was 2–5%. So each
run gets a factor: the median over its queries of how far each lies from its own level
(a median polish of the query × run table, per machine baseline), and a query's series
is its log medians minus the factors. A run with fewer than ``MIN_QUERIES`` queries gets
no factor. The factors form a series of their own: a step there that the machine's own
reference (the calibration query) does not share is a change of the whole suite.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from chbench.history.record import HistoryRun, QueryRecord

MIN_QUERIES = 4
SUITE = "(all queries)"  # the name of the factors' own series
SENSITIVITY_Z = 5.0  # a query's own sensitivity to the factor, where it differs from 1 by this many SEs
MIN_DIFFERENCES = 10  # run-to-run differences needed to estimate it


@dataclass
class Point:
    run: HistoryRun
    query: QueryRecord | None  # None in the suite's series
    log_median: float  # as measured
    factor: float  # the run's machine factor (log), taken out of y
    segment: int  # which machine baseline
    col: int = 0  # the run's position in the table

    @property
    def y(self) -> float:
        return self.log_median - self.factor


@dataclass
class Series:
    name: str
    key: str
    points: list[Point] = field(default_factory=list)
    failed_runs: int = 0  # runs that had the query but no successful sample
    sensitivity: float = 1.0  # how strongly it follows the machine's factor (SeriesTable.fit_sensitivities)

    def segments(self) -> list[tuple[int, int]]:
        """[start, end) of each machine baseline in this series."""
        out: list[tuple[int, int]] = []
        for i, p in enumerate(self.points):
            if i == 0 or p.segment != self.points[i - 1].segment:
                out.append((i, i + 1))
            else:
                out[-1] = (out[-1][0], i + 1)
        return out


@dataclass
class SeriesTable:
    series: list[Series]
    suite: Series  # the machine factors as a series (log_median = the factor, factor 0)
    baselines: list[tuple[int, str]]  # (run position, what changed) where a new baseline starts
    factored: bool  # whether factors were taken out (enough queries per run)
    matrix: np.ndarray | None = None  # queries × runs, log medians (NaN: not in that run)
    factors: np.ndarray | None = None
    enough: np.ndarray | None = None  # runs with enough queries for a factor

    def refine(self, cuts: list[list[int]], rounds: int = 2) -> None:
        """The factors again, each query's level following its own large steps (``cuts``:
        per series, the point positions where a new level starts). Measured on the seeded
        series: with one level per query, four of ten queries stepping up by 5–10% moved
        the median of every run's deviations after them by 1–2%, and other queries showed
        false 2–4% improvements there. Only steps far beyond the detection threshold are
        cuts: with every detected step a cut, those false steps became cuts too and kept
        the bias in place."""
        if not self.factored or self.matrix is None or self.factors is None or self.enough is None:
            return
        m, f = self.matrix, self.factors.copy()
        for _ in range(rounds):
            resid = np.full(m.shape, np.nan)
            for i, s in enumerate(self.series):
                cols = np.array([p.col for p in s.points])
                y = m[i, cols] - f[cols]
                bounds = [0, *cuts[i], len(cols)]
                for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                    resid[i, cols[a:b]] = y[a:b] - float(np.median(y[a:b]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # runs no series had
                delta = np.nan_to_num(np.nanmedian(resid, axis=0))
            f = np.where(self.enough, f + delta, 0.0)
            f[self.enough] -= float(np.median(f[self.enough])) if np.any(self.enough) else 0.0
        self.factors = f
        for s in self.series:
            for p in s.points:
                p.factor = float(f[p.col])
        for p in self.suite.points:
            p.log_median = float(f[p.col])

    def keep_steps(self, steps: list[tuple[int, float]]) -> None:
        """Steps of the whole suite that were not the machine (``steps``: run position, log
        size; history/check.py) are the queries' own: each is taken out of the factors from
        its run to the end of its baseline, so every query's series shows it. Left in, the
        factors hid a ``--setting max_threads=1`` that made nine of ten queries 1.7–2× slower,
        and the tenth, unchanged, showed as a 47% improvement."""
        if not self.factored or self.factors is None or self.enough is None or not steps:
            return
        f = self.factors.copy()
        segment = np.array([p.segment for p in self.suite.points])
        for col, size in steps:
            f[(segment == segment[col]) & (np.arange(len(f)) >= col) & self.enough] -= size
        self.factors = f
        for s in self.series:
            for p in s.points:
                p.factor = float(f[p.col])

    def fit_sensitivities(self, z: float = SENSITIVITY_Z) -> None:
        """How strongly each query follows the machine's factor. Measured here (2026-12-06,
        the built-in suite on the embedded engine, another process busy on one of the two
        cores for the first runs): the queries that use both cores ran 1.5–1.8× slower
        while it was busy, ``join`` 1.08× — with the factor taken out whole, ``join``
        showed a +51% "regression" the moment the machine got quiet. So each query's
        factor is its sensitivity × the run's: the slope of its run-to-run differences on
        the factor's (least absolute deviations: a query's own step is one outlying
        difference), used where it differs from 1 by more than ``z`` standard errors (over at
        least ``MIN_DIFFERENCES``) — a query that follows the machine like the others keeps
        1 and loses no precision. history/check.py fits them only where the machine stepped:
        fitted on every seeded history they fired by chance and raised the false alerts per
        family from 2.0 to 2.35; where the machine stepped only, 2.15 (docs/history.md)."""
        if not self.factored or self.factors is None:
            return
        for s in self.series:
            s.sensitivity = _sensitivity(s, self.factors, z)
            for p in s.points:
                p.factor = s.sensitivity * float(self.factors[p.col])


def _sensitivity(s: Series, f: np.ndarray, z: float) -> float:
    y = np.array([p.log_median for p in s.points])
    x = f[[p.col for p in s.points]]
    seg = np.array([p.segment for p in s.points])
    same = seg[1:] == seg[:-1]
    dy, dx = np.diff(y)[same], np.diff(x)[same]
    dy, dx = dy[np.abs(dx) > 1e-9], dx[np.abs(dx) > 1e-9]
    if len(dx) < MIN_DIFFERENCES:
        return 1.0
    slopes, weights = dy / dx, np.abs(dx)
    order = np.argsort(slopes)
    cum = np.cumsum(weights[order])
    b = float(slopes[order][np.searchsorted(cum, cum[-1] / 2)])  # the weighted median: the L1 slope
    e = dy - b * dx
    se = 1.2533 * 1.4826 * float(np.median(np.abs(e - np.median(e)))) / math.sqrt(float(np.sum(dx ** 2)))
    return min(max(b, 0.0), 3.0) if abs(b - 1) > z * se else 1.0


def build(runs: list[HistoryRun]) -> SeriesTable:
    """Every query's series over ``runs`` (oldest first)."""
    seg_of: list[int] = []
    baselines: list[tuple[int, str]] = []
    for i, run in enumerate(runs):
        if i and run.baseline != runs[i - 1].baseline:
            was, now = runs[i - 1].baseline, run.baseline
            what = f"host {was[0]} → {now[0]}" if was[0] != now[0] else f"CPU {was[1]} → {now[1]}"
            baselines.append((i, what))
        seg_of.append(len(baselines))
    keys: dict[tuple[str, str], int] = {}
    for run in runs:
        for q in run.queries:
            keys.setdefault((q.name, q.key), len(keys))
    m = np.full((len(keys), len(runs)), np.nan)
    failed = np.zeros(len(keys), dtype=int)
    for j, run in enumerate(runs):
        for q in run.queries:
            med = q.median_ms
            if med is not None and med > 0:
                m[keys[(q.name, q.key)], j] = math.log(med)
            else:
                failed[keys[(q.name, q.key)]] += 1
    factors = np.zeros(len(runs))
    for s in set(seg_of):
        cols = np.array([j for j, g in enumerate(seg_of) if g == s])
        factors[cols] = _polish(m[:, cols])
    factored = bool(np.any(factors != 0))
    enough = np.sum(~np.isnan(m), axis=0) >= MIN_QUERIES
    series = [Series(name, key, failed_runs=int(failed[i])) for (name, key), i in keys.items()]
    for (name, key), i in keys.items():
        for j, run in enumerate(runs):
            if not np.isnan(m[i, j]):
                q = next(q for q in run.queries if q.name == name and q.key == key)
                series[i].points.append(Point(run, q, float(m[i, j]), float(factors[j]), seg_of[j], j))
    suite = Series(SUITE, "", [Point(run, None, float(factors[j]), 0.0, seg_of[j], j) for j, run in enumerate(runs)
                               if factored])
    return SeriesTable(series, suite, baselines, factored, m, factors, enough)


def _polish(m: np.ndarray, rounds: int = 4) -> np.ndarray:
    """Each run's factor (a column): median polish of the query × run table, the factor of a
    run with fewer than MIN_QUERIES queries 0."""
    enough = np.sum(~np.isnan(m), axis=0) >= MIN_QUERIES
    c = np.zeros(m.shape[1])
    if m.shape[0] < MIN_QUERIES or not np.any(enough):
        return c
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows of queries in no run here
        for _ in range(rounds):
            level = np.nanmedian(m - c[None, :], axis=1)
            c = np.where(enough, np.nanmedian(m - level[:, None], axis=0), 0.0)
            c = np.nan_to_num(c - np.median(c[enough]))
    return c
