"""From a replay's samples to its numbers: how well the schedule held, the per-hash
table (count, p50/p90/p99 per target, the captured p50, errors) and, with two targets,
each normalized query's ratio with its interval and verdict — chbench's comparison
(``stats/compare.py``, docs/statistics.md) on the query times of each side."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from chbench.stats.compare import Options, SideData, compare_queries


def _pct(values: np.ndarray, q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if len(values) else None


def schedule_summary(planned: int, skipped: int, columns: list[dict[str, Any]], targets: int, late_ms: float,
                     timed: bool) -> dict[str, Any]:
    """``planned`` queries per target × ``targets``; ``sent`` + ``dropped`` + ``skipped`` =
    ``planned``. Lateness = actual send − planned send (open loop only)."""
    lateness = np.concatenate([np.asarray(c["lateness_ms"], dtype=float) for c in columns]) if columns \
        else np.zeros(0)
    sent = int(len(lateness))
    n = max(1, targets)
    out: dict[str, Any] = {
        "planned": planned * n, "sent": sent, "late": int((lateness > late_ms).sum()) if timed else 0,
        "dropped": max(0, (planned - skipped) * n - sent), "skipped": skipped * n,
        "lateness_ms": {"p50": _pct(lateness, 50), "p99": _pct(lateness, 99),
                        "max": round(float(lateness.max()), 3) if sent else None} if timed else
        {"p50": None, "p99": None, "max": None},
        "late_threshold_ms": late_ms,
    }
    return out


def side_stats(col: dict[str, Any], n_hashes: int) -> list[dict[str, Any] | None]:
    """Per hash: count, errors, p50/p90/p99 of latency (from the planned time) and of
    the query's own time (from the send)."""
    hashes = np.asarray(col["hash"], dtype=int)
    codes = np.asarray(col["error_code"], dtype=int)
    service = np.asarray(col["service_ms"], dtype=float)
    latency = np.asarray(col["latency_ms"], dtype=float)
    out: list[dict[str, Any] | None] = [None] * n_hashes
    for h in np.unique(hashes):
        sel = hashes == h
        ok = sel & (codes == 0)
        errs = codes[sel & (codes != 0)]
        out[int(h)] = {"count": int(sel.sum()), "errors": int(len(errs)),
                       "errors_by_code": {str(c): int(n) for c, n in zip(*np.unique(errs, return_counts=True),
                                                                        strict=True)},
                       "p50_ms": _pct(service[ok], 50), "p90_ms": _pct(service[ok], 90),
                       "p99_ms": _pct(service[ok], 99), "latency_p99_ms": _pct(latency[ok], 99)}
    return out


def by_hash(hashes: list[dict[str, Any]], columns: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    stats = {side: side_stats(col, len(hashes)) for side, col in columns.items()}
    rows = []
    for i, h in enumerate(hashes):
        sides = {side: st[i] for side, st in stats.items() if st[i] is not None}
        row = {"hash": h["hash"], "name": h["name"], "count": h["count"], "original_p50_ms": h.get("original_p50_ms"),
               "sides": sides}
        if len(columns) == 2:
            a, b = (sides.get(s) for s in columns)
            errs_a = bool(a and a["errors"])
            errs_b = bool(b and b["errors"])
            if errs_a != errs_b:
                row["errors_on_one_side"] = "B" if errs_b else "A"
        rows.append(row)
    return rows


def compare(hashes: list[dict[str, Any]], columns: dict[str, dict[str, Any]], opts: Options,
            paired: bool = False) -> dict[str, Any]:
    """chbench's verdict per normalized query, on each side's successful query times,
    pooled. ``paired``: on the ratios of each statement's two sends instead (an open-loop
    replay of both targets at once) — measured, not used: it flagged 2.6% of the queries of
    A/A replays (bench/replay_pairs.py, docs/replay.md)."""
    from chbench.compare.sides import replay_side_data

    ids = list(columns)
    data: list[dict[str, SideData]] = [
        {hashes[i]["hash"]: d for i, d in replay_side_data(hashes, columns[side], paired).items()}
        for side in ids[:2]]
    names = [h["hash"] for h in hashes if h["hash"] in data[0] or h["hash"] in data[1]]
    result = compare_queries(names, data[0], data[1], replace(opts, paired=paired))
    by_name = {h["hash"]: h["name"] for h in hashes}
    for row in result.queries:
        row.label = by_name.get(row.name, "")
    return result.to_json()  # kept in the replay's results file as JSON


# A replay overloaded the server when almost none of its statements ran alone
# and several were in flight at a time on average: its times are mostly waiting, and such
# a replay's level moves by several times from one replay to the next. Measured
# (bench/replay_pairs.py --only separate, 2026-12-05, one 26.9 server, 2 cores): at
# --speed 2 every A/A replay had 2.6–38 in flight and at most 1% alone, medians 43–1,040
# ms per replay, 15 of 48 queries flagged one replay against the next; at --speed 1, over
# two runs, 0.6–1.8 in flight and 0–49% alone (never both past the thresholds below), 1
# and 0 of 48 flagged.
OVERLOAD_ALONE = 0.02
OVERLOAD_IN_FLIGHT = 2.0


@dataclass(frozen=True)
class Backlog:
    """One target's statements in one replay: how many were in flight on average (the sum
    of their service times over the replay's span: Little's law) and what share ran with
    no other in flight."""

    in_flight: float
    alone: float

    @property
    def overloaded(self) -> bool:
        return self.alone < OVERLOAD_ALONE and self.in_flight >= OVERLOAD_IN_FLIGHT

    def describe(self) -> str:
        return f"{self.in_flight:.1f} statements in flight on average, {self.alone:.0%} ran alone"


def backlog_of(col: dict[str, Any]) -> Backlog | None:
    """A sweep over the statements in the order they were sent: one ran alone when none
    sent before it was still running and the next was sent after it ended."""
    service = np.asarray(col.get("service_ms") or [], dtype=float) / 1000.0
    if len(service) < 2:
        return None
    start = np.asarray(col["planned_s"], dtype=float) + np.asarray(col["lateness_ms"], dtype=float) / 1000.0
    order = np.argsort(start, kind="stable")
    start, end = start[order], start[order] + service[order]
    before = np.concatenate(([-np.inf], np.maximum.accumulate(end)[:-1])) > start
    after = np.concatenate((start[1:] < end[:-1], [False]))
    span = float(end.max() - start.min())
    return Backlog(float(service.sum() / span) if span > 0 else 0.0, float(np.mean(~(before | after))))
