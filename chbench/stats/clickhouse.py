"""ClickHouse CI's own decision rule (``chbench compare --method clickhouse``), for users
who want its verdicts exactly; chbench's rule (``stats/compare.py``) stays the default.

From ClickHouse's performance comparison (``tests/performance/scripts/eqmed.sql`` and
the ``report`` step of ``compare.sh``, Apache-2.0):

* randomization test on medians: both sides' runs pooled, shuffled and split into two
  halves (alternate labels after the shuffle), ``SPLITS`` = 10,000 times; the
  ``QUANTILE`` = 0.99 quantile (exact: the sorted value at ⌊0.99·n⌋) of |median(half 1) −
  median(half 2)| is the noise a difference must clear;
* ``stat_threshold`` = that quantile / left median; ``diff`` = (right − left) / left median;
* changed when |diff| > max(``CHANGED_MIN`` = 0.1, the test's threshold) and |diff| ≥
  stat_threshold (non-strict: with few runs the 0.99 quantile is the distribution's
  maximum, which an observed difference can reach);
* unstable when not changed and stat_threshold > max(``UNSTABLE_MIN`` = 0.2, the test's
  threshold + ``UNSTABLE_MARGIN`` = 0.1).

ClickHouse skips queries faster than a short-query threshold in its report; chbench
decides them like any other and flags them "too short" (as for its own rule). The seed is
fixed per query (``SEED`` + CRC-32 of its name): the same files give the same verdicts.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from chbench.stats.compare import SideData
from chbench.stats.verdict import ClickHouseDecision, ComparisonResult, Evidence

SPLITS = 10_000
QUANTILE = 0.99
CHANGED_MIN = 0.10
UNSTABLE_MIN = 0.20
UNSTABLE_MARGIN = 0.10
DEFAULT_TEST_THRESHOLD = 0.05  # perf.py's ignored_relative_change when a test sets none
SEED = 20261201
CHUNK = 2_000_000  # values shuffled at once (bounds memory for queries with many runs)


def stat_threshold(a: list[float], b: list[float], seed: int) -> float:
    """The 0.99 quantile of the randomization distribution of |median difference|,
    relative to the left median."""
    pooled = np.asarray([*a, *b], dtype=float)
    rng = np.random.default_rng(seed)
    rows = max(1, CHUNK // len(pooled))
    diffs = []
    for start in range(0, SPLITS, rows):
        n = min(rows, SPLITS - start)
        shuffled = rng.permuted(np.tile(pooled, (n, 1)), axis=1)
        diffs.append(np.abs(np.median(shuffled[:, 0::2], axis=1) - np.median(shuffled[:, 1::2], axis=1)))
    d = np.sort(np.concatenate(diffs))
    return float(d[int(QUANTILE * len(d))]) / float(np.median(a))


def decide(a: SideData, b: SideData, name: str, test_threshold: float | None) -> tuple[str, str, ClickHouseDecision]:
    """ClickHouse's verdict for one query, why, and the numbers that decided it."""
    thr = DEFAULT_TEST_THRESHOLD if test_threshold is None else test_threshold
    ta, tb = a.raw_times or a.times, b.raw_times or b.times  # as measured: CI's rule knows no round factors
    left, right = float(np.median(ta)), float(np.median(tb))
    diff = (right - left) / left if left > 0 else math.inf
    st = stat_threshold(ta, tb, SEED + zlib.crc32(name.encode()))
    changed_at, unstable_at = max(CHANGED_MIN, thr), max(UNSTABLE_MIN, thr + UNSTABLE_MARGIN)
    changed = abs(diff) > changed_at and abs(diff) >= st
    if changed:
        verdict = "slower" if diff > 0 else "faster"
        why = f"|diff| {abs(diff):.1%} > {changed_at:.0%} and ≥ stat_threshold {st:.1%}"
    elif st > unstable_at:
        verdict = "unstable"
        why = f"stat_threshold {st:.1%} > {unstable_at:.0%}: the runs cannot tell"
    else:
        verdict = "no change"
        why = (f"|diff| {abs(diff):.1%} within {changed_at:.0%}" if abs(diff) <= changed_at
               else f"|diff| {abs(diff):.1%} below stat_threshold {st:.1%}")
    return verdict, why, ClickHouseDecision(diff, st, changed_at, unstable_at)


def apply_clickhouse(result: ComparisonResult, side_a: dict[str, SideData], side_b: dict[str, SideData],
                     thresholds: dict[str, float]) -> None:
    """Replace the verdicts of tested queries by ClickHouse's (chbench's kept as
    ``chbench_verdict``), and recount the summary."""
    for row in result.queries:
        a, b = side_a.get(row.name), side_b.get(row.name)
        if not row.tested or a is None or b is None or not a.times or not b.times:
            continue  # untested (one side only, failed, skipped, summary numbers): as chbench decided
        verdict, why, decision = decide(a, b, row.name, thresholds.get(row.name))
        row.chbench = Evidence(row.verdict, reasoning=row.reasoning)
        row.verdict, row.reasoning, row.clickhouse = verdict, why, decision
        row.reason = f"ClickHouse CI's rule: {why}"
    result.recount()
