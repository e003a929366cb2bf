"""Latency histograms with a fixed log-linear bucket layout (HDR-style).

Values are microseconds. Below 256 µs every microsecond has its own bucket; above, each
power of two is split into 128 equal buckets, so a bucket is never wider than 1/128 of
its lower bound (< 0.8%) and a reported value (the bucket's midpoint) is within 0.4% of
the true one. Because every histogram uses the same layout, merging is exact: add the
counts. Memory is bounded by the layout (at most ~4,100 buckets up to one hour), not by
how many values were recorded, so a ten-hour run takes the same memory as a minute.

Count, sum, sum of squares, min and max are kept exactly besides the buckets, so means
and variances (the Student t-test) are exact, not bucketed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

_LINEAR = 256  # values below are counted exactly, one bucket per microsecond
_SUB = 128  # buckets per power of two above
_MAX_US = 2**40  # ~12.7 days: larger values are clamped into the last bucket


def bucket_of(us: int) -> int:
    if us < _LINEAR:
        return us if us > 0 else 0
    if us >= _MAX_US:
        us = _MAX_US - 1
    e = us.bit_length() - 8  # >= 1
    return e * _SUB + (us >> e)


def bucket_bounds(index: int) -> tuple[int, int]:
    """[low, high) in microseconds of one bucket."""
    if index < _LINEAR:
        return index, index + 1
    e, m = divmod(index, _SUB)
    e -= 1
    m += _SUB
    return m << e, (m + 1) << e


N_BUCKETS = bucket_of(_MAX_US - 1) + 1


class Histogram:
    """A mergeable latency histogram (values recorded in milliseconds)."""

    __slots__ = ("counts", "count", "total", "total_sq", "min", "max")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0.0  # ms
        self.total_sq = 0.0  # ms²
        self.min = math.inf
        self.max = 0.0

    def record(self, ms: float) -> None:
        us = int(ms * 1000.0)
        if us < _LINEAR:
            i = us if us > 0 else 0
        else:
            if us >= _MAX_US:
                us = _MAX_US - 1
            e = us.bit_length() - 8
            i = e * _SUB + (us >> e)
        c = self.counts
        c[i] = c.get(i, 0) + 1
        self.count += 1
        self.total += ms
        self.total_sq += ms * ms
        if ms < self.min:
            self.min = ms
        if ms > self.max:
            self.max = ms

    def merge(self, other: Histogram) -> Histogram:
        c = self.counts
        for i, n in other.counts.items():
            c[i] = c.get(i, 0) + n
        self.count += other.count
        self.total += other.total
        self.total_sq += other.total_sq
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        return self

    def copy(self) -> Histogram:
        return Histogram().merge(self)

    # -- statistics ----------------------------------------------------------------------
    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def variance(self) -> float | None:
        """Sample variance (n - 1), exact."""
        if self.count < 2:
            return None
        m = self.total / self.count
        return max(0.0, (self.total_sq - self.count * m * m) / (self.count - 1))

    def percentile(self, p: float) -> float | None:
        """The p-th percentile (0..100) in ms: the midpoint of the bucket holding the
        value of rank ceil(p/100 * n), clamped to the exact min and max."""
        if not self.count:
            return None
        if p <= 0:
            return self.min
        if p >= 100:
            return self.max
        return self.at_rank(max(1, math.ceil(p / 100.0 * self.count)))

    def at_rank(self, rank: int) -> float:
        """The value of rank ``rank`` (1-based, ascending) in ms: its bucket's midpoint,
        clamped to the exact min and max; ``inf`` past the last value."""
        if rank > self.count:
            return math.inf
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= rank:
                lo, hi = bucket_bounds(i)
                return min(max((lo + hi) / 2000.0, self.min), self.max)
        return self.max

    def percentiles(self, ps: Iterable[float]) -> dict[float, float | None]:
        return {p: self.percentile(p) for p in ps}

    def values(self, cap: int | None = None) -> Iterator[tuple[float, int]]:
        """(representative value in ms, count) per bucket, ascending; with cap, counts
        are thinned proportionally so that at most ~cap values come out."""
        scale = 1.0 if not cap or self.count <= cap else cap / self.count
        for i in sorted(self.counts):
            lo, hi = bucket_bounds(i)
            n = self.counts[i]
            k = n if scale == 1.0 else max(1, round(n * scale))
            yield min(max((lo + hi) / 2000.0, self.min), self.max), k

    def expand(self, cap: int = 20000) -> list[float]:
        out: list[float] = []
        for v, n in self.values(cap):
            out.extend([v] * n)
        return out

    # -- serialisation -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "unit": "us-log-linear-128",
            "count": self.count,
            "sum_ms": self.total,
            "sum_sq_ms2": self.total_sq,
            "min_ms": None if self.count == 0 else self.min,
            "max_ms": self.max,
            "buckets": [[i, self.counts[i]] for i in sorted(self.counts)],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Histogram:
        h = cls()
        h.counts = {int(i): int(n) for i, n in d.get("buckets", [])}
        h.count = int(d.get("count", sum(h.counts.values())))
        h.total = float(d.get("sum_ms", 0.0))
        h.total_sq = float(d.get("sum_sq_ms2", 0.0))
        h.min = math.inf if d.get("min_ms") is None else float(d["min_ms"])
        h.max = float(d.get("max_ms", 0.0))
        return h
