"""When an adaptive side-by-side query has measured enough (docs/statistics.md, "Adaptive
stopping"): the runner's rule, kept pure so the noise simulator runs the very same one.

A query's paired interval (stats/paired.py) is *precise* when within ±``--precision``
and *decided* when ``compare`` would give it a definite verdict at ``--threshold``: its
90% interval within ±threshold (``no change``, the equivalence test) or its estimate
beyond ±threshold with the interval excluding 0 (``slower``/``faster``). A query stops
when both hold; one that is precise but undecided goes on — an interval of ±2% around
+4% is neither a change of 5% nor ruled out one (seen 2026-12-03: `uniq` +4.4%
[+0.9%, +9.1%] stopped and was `unstable`).

Time: each query has ``--max-time-per-query``; one still undecided at its budget may go
on, up to ``EXTEND`` budgets, on the time other queries of the run left unused by
finishing early (a pool: the run as a whole never takes longer than its queries'
budgets). A decided query at its budget stops, as before.

Numbers only (numpy): the runner calls :func:`look` after every round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from chbench.stats.paired import hl_interval, rounds_to_show_a_change

Z90_OVER_Z95 = 1.6449 / 1.9600  # the 90% interval from the 95% one, about the estimate
EXTEND = 2.0  # an undecided query may take up to this many budgets, from the pool


def equivalence_interval(centre: float, lo: float, hi: float) -> tuple[float, float]:
    """The 90% interval (log) of the two one-sided tests at 5% each: the 95% one's two
    sides each scaled about the estimate by z(0.95)/z(0.975) (a normal approximation for
    the bootstrap, Hodges–Lehmann and t intervals alike)."""
    return centre - (centre - lo) * Z90_OVER_Z95, centre + (hi - centre) * Z90_OVER_Z95


def equivalent(centre: float, lo: float, hi: float, threshold: float) -> bool:
    """The 90% interval (log scale in, ratio threshold) lies within ±threshold."""
    elo, ehi = equivalence_interval(centre, lo, hi)
    return -math.log1p(threshold) < elo and ehi < math.log1p(threshold)


@dataclass(frozen=True)
class Look:
    precise: bool
    decided: bool

    @property
    def settled(self) -> bool:
        return self.precise and self.decided


def look(d: list[float] | np.ndarray, precision: float, threshold: float | None, tests: int = 1) -> Look:
    """How one pair's per-round log ratios ``d`` stand (no threshold: every interval is
    decided, the rule before it knew one). A change is decided only with enough rounds to
    pass Holm's first step over ``tests`` (the run's queries × compared pairs): seen
    2026-12-06, a query +97% stopped at 6 rounds, p 0.031 — slower only because the other
    nine queries' p were smaller; had all stopped at 6, Holm would have left all ten
    ``unstable``."""
    if len(d) < 2:
        return Look(False, threshold is None)
    c, lo, hi = hl_interval(d)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Look(False, threshold is None)
    precise = (hi - lo) / 2.0 <= math.log1p(precision)
    if threshold is None:
        return Look(precise, True)
    changed = abs(c) >= math.log1p(threshold) and (lo > 0.0 or hi < 0.0) and len(d) >= rounds_to_show_a_change(tests)
    return Look(precise, changed or equivalent(c, lo, hi, threshold))


@dataclass
class TimePool:
    """The time queries left unused by finishing under their budget, which undecided ones
    may spend (``EXTEND`` budgets at most each)."""

    budget: float
    saved: float = 0.0
    over: dict[str, float] = field(default_factory=dict)  # what each query took beyond its budget

    def finished(self, name: str, spent: float) -> None:
        self.saved += max(0.0, self.budget - spent)
        if name in self.over:  # it went on past its budget: what that took in the end
            self.over[name] = max(0.0, spent - self.budget)

    def may_extend(self, name: str, spent: float) -> bool:
        """Whether a query at or past its budget may run another round (the part of a
        round that ends past the budget, as every query's last round does, costs the
        pool nothing when the query stops there)."""
        beyond = max(0.0, spent - self.budget)
        used = sum(v for k, v in self.over.items() if k != name) + beyond
        if spent < EXTEND * self.budget and used < self.saved:
            self.over[name] = beyond
            return True
        return False

    def to_json(self) -> dict[str, object]:
        """For the results file (``meta.time_pool``, one per session)."""
        beyond = {k: round(v, 3) for k, v in self.over.items() if v > 0}
        return {"budget_s": self.budget, "saved_s": round(self.saved, 3),
                "beyond_budget_s": round(sum(beyond.values()), 3), "queries_beyond_budget": beyond}


def should_stop(now: Look, pool: TimePool, name: str, spent: float, fewest_ok: int, fewest_runs: int,
                most_runs: int, min_runs: int, max_runs: int) -> bool:
    """The adaptive rule for one query after a round (the runner's, and the simulator's):
    settled with enough successful runs; or at its budget and decided, or undecided with
    no time left in the pool; or at the most runs allowed. A query that stops gives the
    pool what it left of its budget."""
    at_budget = spent >= pool.budget and fewest_runs >= min_runs
    out_of_time = at_budget and (now.decided or not pool.may_extend(name, spent))
    stop = (fewest_ok >= min_runs and now.settled) or out_of_time or most_runs >= max_runs
    if stop:
        pool.finished(name, spent)
    return stop

