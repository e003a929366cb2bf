"""A plan: the workload × targets × settings that one ``chbench run`` executes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from chbench.stats.paired import MIN_PAIRS, rounds_to_show_a_change
from chbench.targets import Target
from chbench.workload import Query, Workload


@dataclass
class SidePlan:
    """One side of a run: a target, its workload and the settings asked for."""

    id: str  # "A", "B", … (side_ids): the order of --target
    target: Target
    workload: Workload
    settings: dict[str, str] = field(default_factory=dict)  # requested by the user
    scale: float | None = None  # for the built-in suite
    label: str = ""

    @property
    def queries(self) -> list[Query]:
        return self.workload.queries

    def query(self, name: str) -> Query | None:
        return self.workload.query(name)


SIDE_IDS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # at most 26 sides in one run


def side_ids(n: int) -> str:
    """The ids of n sides: A, B, C, …"""
    return SIDE_IDS[:n]


def compared_pairs(ids: list[str], baseline: int = 0) -> list[tuple[str, str]]:
    """What compare judges in a run of N sides: the baseline against each other side,
    then each adjacent pair not already in (two sides: just A → B)."""
    pairs = [(ids[baseline], s) for i, s in enumerate(ids) if i != baseline]
    for x, y in zip(ids, ids[1:], strict=False):
        if (x, y) not in pairs and (y, x) not in pairs:
            pairs.append((x, y))
    return pairs


@dataclass
class Plan:
    sides: list[SidePlan]
    # warm-up runs per query and side; None: 1, or past the JIT's compile where it is on
    # (runner/settings.py, jit_warmup)
    warmup: int | None = None
    iterations: int | None = None  # None: adaptive
    min_runs: int = 5
    max_runs: int = 1000
    target_precision: float = 0.02  # stop when the median's 95% CI is within ±2%
    # adaptive side by side: a precise query goes on while its verdict at this threshold
    # is undecided, on time others left unused (stats/stopping.py); None: precision only
    threshold: float | None = 0.05
    max_time_per_query: float = 20.0
    timeout: float | None = None
    keep_format: bool = False
    allow_writes: bool = False
    interleave: bool = True
    server_metrics: bool = False
    # every measured run's server profile (ProfileEvents, operator times) fetched after
    # the rounds, untimed (chbench/explain/collect.py); --no-explain
    explain: bool = True
    # --profile: the query profiler's period (ms) for the timed queries, and where the
    # sampled stacks are read from after the rounds (explain/collect.py)
    profile_ms: float | None = None
    trace_log: str = "system.trace_log"
    calibration: bool = True
    probes: bool = True  # machine-state probes between rounds (chbench/machine/)
    # separate runs: rounds measured while other processes use more than this share of
    # all CPUs are set aside and measured again, within quiet_wait seconds (runner.py)
    quiet_threshold: float = 0.10
    quiet_wait: float = 60.0
    sessions: int = 1  # measured sessions in one file (fresh connections, a pause between)
    session_gap: float = 5.0  # seconds between sessions
    max_threads: int | None = None
    more_to_come: bool = False  # bisect: further runs add rounds, judged together (no warning of too few)
    notes: list[str] = field(default_factory=list)  # what the plan made of what was asked: in the file's notes

    @property
    def side_by_side(self) -> bool:
        return len(self.sides) > 1

    def rounds_warning(self) -> str | None:
        """Side by side with fixed iterations too few for any verdict: said before the run
        (seen: 'upgrade 24.8 26.9 --iterations 5' ended 'nothing slower' with one query 1.9x
        slower, every query unstable)."""
        rounds = (self.iterations or 0) * self.sessions
        if not self.side_by_side or self.iterations is None or self.more_to_come:
            return None
        if rounds < MIN_PAIRS:
            return (f"{rounds} rounds: a side-by-side speed verdict needs {MIN_PAIRS} or more (below that no "
                    "95% paired interval exists), so every query that runs will be 'unstable'; give --iterations "
                    f"{MIN_PAIRS} or more")
        tests = self.tests()
        need = rounds_to_show_a_change(tests)
        if rounds < need:  # (seen: trend 24.8 -> 26.9 at 6 rounds, hashing +68% [+47%, +134%], no step)
            return (f"{rounds} rounds: no query can be shown slower or faster — with {tests} tests corrected for "
                    f"each other (Holm, alpha 0.05) that takes {need} rounds or more; 'no change' can still be "
                    f"shown. Give --iterations {math.ceil(need / self.sessions)} or more to see changes")
        return None

    def tests(self) -> int:
        """How many comparisons ``compare`` corrects for each other (Holm): every query of
        every compared pair of sides."""
        return len(self.query_names()) * len(compared_pairs([s.id for s in self.sides]))

    def query_names(self) -> list[str]:
        """Every query name, in the order of side A, then those only B has."""
        names: list[str] = []
        for side in self.sides:
            for q in side.queries:
                if q.name not in names:
                    names.append(q.name)
        return names

    def options(self) -> dict[str, object]:
        """As the results file records them."""
        return {"warmup": self.warmup, "iterations": self.iterations, "adaptive": self.iterations is None,
                "min_runs": self.min_runs, "target_precision": self.target_precision, "threshold": self.threshold,
                "max_time_per_query": self.max_time_per_query, "timeout": self.timeout,
                "keep_format": self.keep_format, "allow_writes": self.allow_writes, "interleave": self.interleave,
                "server_metrics": self.server_metrics, "sessions": self.sessions, "session_gap": self.session_gap,
                "probes": self.probes, "calibration": self.calibration, "quiet_threshold": self.quiet_threshold,
                "quiet_wait": self.quiet_wait, "explain": self.explain,
                "profile_ms": self.profile_ms, "trace_log": self.trace_log}
