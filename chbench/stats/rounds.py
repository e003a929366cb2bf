"""The machine's state per round, taken out of a separate run (docs/statistics.md,
"Separate runs: round factors").

All queries of a round run within seconds of each other on the same machine, so a
machine that is slower for a while slows every query of those rounds alike. A two-way
model on the log scale, query × round:

    log t[q, r] = query[q] + round[r] + residual

estimates each round's factor as the median over the *other* queries of that round of
their deviation from their own median (leave-one-out, so a query's own change never
feeds its own correction; the median, so one query's outlier does not move it). Each
time is divided by its round's factor: what remains is the query's own noise. A level
shared by all rounds is not touched (the factors are centred per query), so a real
change of a query, or of every query, stays in the data; the shift between two runs is
``stats/shift.py``'s business. With sessions, each session's own level (the machine's,
shared by all its queries) is taken out with its rounds: how far those levels moved is
kept (``RoundFactors.levels``), for the comparison must add it back as the uncertainty
of the level every query shares (``stats/compare.py``, ``sessions_level``).

Needs at least ``MIN_QUERIES`` queries measured in a round (interleaved rounds) for at
least half of the times (``MIN_COVERED``): otherwise the run is left as measured.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from chbench.stats.compare import SideData

MIN_QUERIES = 4


@dataclass(frozen=True)
class RoundFactors:
    """What was taken out: per (session, round) the typical factor, and its spread."""

    factors: dict[tuple[int, int], float]  # log, median over all queries of the round
    spread: float  # robust sd of those factors (log): how much the machine moved between rounds
    levels: dict[int, float]  # log, per session: the median of its rounds' factors (the machine's level)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"rounds": len(self.factors), "spread": math.expm1(self.spread)}
        if len(self.levels) > 1:
            out["session_levels"] = [math.expm1(self.levels[k]) for k in sorted(self.levels)]
        return out


MIN_COVERED = 0.5


def _covered(by_round: dict[tuple[int, int], dict[str, float]]) -> float:
    """The share of the times that lie in rounds of ``MIN_QUERIES`` queries or more: the
    rounds that tell the machine. Samples, not rounds: an adaptive run ends in many rounds
    of the one or two queries still running, which hold few of its times. Gated on the
    median round, five of six A/A pairs of `run --sessions 3` (2026-12-07) had one side
    left as measured and the other's factors taken out, the sessions' levels then added
    back for neither: that side's median round held 2–2.5 queries while 73–81% of its
    times lay in rounds of 4 or more (the three pairs counted)."""
    sizes = [len(r) for r in by_round.values()]
    return sum(n for n in sizes if n >= MIN_QUERIES) / sum(sizes)


def round_factors(times: dict[str, list[tuple[tuple[int, int], float]]],
                  ) -> tuple[dict[str, list[float]], RoundFactors] | None:
    """Each query's times with its round's factor taken out (same order as given), and
    the factors; None when the rounds hold too few queries to tell the machine apart."""
    logs: dict[str, list[tuple[tuple[int, int], float]]] = {
        q: [(k, math.log(t)) for k, t in rows if t > 0] for q, rows in times.items()}
    centre = {q: float(np.median([v for _, v in rows])) for q, rows in logs.items() if rows}
    by_round: dict[tuple[int, int], dict[str, float]] = {}
    for q, rows in logs.items():
        for k, v in rows:
            by_round.setdefault(k, {})[q] = v - centre[q]
    if not by_round or _covered(by_round) < MIN_COVERED:
        return None
    out: dict[str, list[float]] = {}
    for q, rows in times.items():
        adjusted = []
        for k, t in rows:
            others = [d for name, d in by_round.get(k, {}).items() if name != q]
            # statistics.median: np.median's number (the same two middle values halved)
            # at a twenty-fifth of its cost on a round's handful of queries (1.2 against 29 µs, 9 values)
            f = statistics.median(others) if len(others) >= MIN_QUERIES - 1 else 0.0
            adjusted.append(t / math.exp(f) if t > 0 else t)
        out[q] = adjusted
    # only rounds that hold enough queries tell the machine: an adaptive run's last rounds
    # hold the one or two queries still running, whose "factor" is their own noise
    # (measured: counting those rounds put the spread at 9–11% where it was ~3%)
    typical = {k: float(np.median(list(r.values()))) for k, r in by_round.items() if len(r) >= MIN_QUERIES}
    # robust (1.4826 x MAD): one disturbed round must not inflate every query's allowance;
    # within each session, so a step between sessions is not read as the machine's
    # round-to-round noise (seen: 15–23% with sessions 20% apart, 10–12% within them)
    sessions: dict[int, list[float]] = {}
    for (session, _), level in typical.items():
        sessions.setdefault(session, []).append(level)
    levels = {k: float(np.median(v)) for k, v in sessions.items()}
    dev = np.concatenate([np.asarray(v) - levels[k] for k, v in sessions.items()]) if sessions else np.zeros(0)
    spread = 1.4826 * float(np.median(np.abs(dev))) if len(dev) > 1 else 0.0
    return out, RoundFactors(typical, spread, levels)


def take_out(queries: dict[str, SideData]) -> RoundFactors | None:
    """One separate run's queries with each round's factor taken out, in place: the
    adjusted times in ``times`` (and its sessions), the times as measured in
    ``raw_times``, the side's factor spread in ``round_spread``, each session's level
    in ``session_levels``. None (the run as it was) when its rounds hold too few queries."""
    done = round_factors({name: d.keyed() for name, d in queries.items() if d.keyed()})
    if done is None:
        return None
    adjusted, factors = done
    for name, times in adjusted.items():
        d = queries[name]
        d.raw_times, d.times, d.round_spread = d.times, times, factors.spread
        d.session_levels = [factors.levels[k] for k in sorted(factors.levels)]
        if d.sessions:
            by_session: dict[int, list[float]] = {}
            for (session, _), t in zip(d.keys, times, strict=True):
                by_session.setdefault(session, []).append(t)
            d.sessions = [by_session[k] for k in sorted(by_session)]
    return factors
