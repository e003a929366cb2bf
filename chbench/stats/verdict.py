"""The comparison's typed core: what was decided for each query and for the whole.

Built once by ``stats/compare.py`` (and only amended by ``stats/shift.py``,
``stats/clickhouse.py`` and ``compare/checks.py`` through these fields), read by every
report, command and exporter through these types; turned into the JSON that
``chbench compare --format json`` prints in one place each (``to_json``), with today's
keys in today's places — checks outside the repo read them (docs/results-schema.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from chbench.stats.paired import PairedResult, finite_or_none

SLOWER, FASTER, NO_CHANGE, UNSTABLE = "slower", "faster", "no change", "unstable"
ONLY_IN_A, ONLY_IN_B, FAILED, FAILS_ON_B, SKIPPED = "only in A", "only in B", "failed", "fails on B only", "skipped"
ANSWER_CHANGED = "answer changed"
FLAGGED = (SLOWER, FASTER)


def _r4(v: float) -> float:
    return round(v, 4)


@dataclass
class SideSummary:
    """One side of one query, described: run count, percentiles and the median's interval
    (or a foreign file's summary numbers)."""

    runs: int
    errors: int
    stats: dict[str, float] = field(default_factory=dict)  # min p10 median p90 p99 max mean
    median_ci: tuple[float, float] | None = None
    summary_only: bool = False
    server_median: float | None = None
    error_sample: str | None = None

    @property
    def median(self) -> float | None:
        return self.stats.get("median")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": self.runs, "errors": self.errors}
        out.update({k: _r4(v) for k, v in self.stats.items()})
        if self.median_ci is not None:
            out["median_ci"] = [_r4(self.median_ci[0]), _r4(self.median_ci[1])]
        if self.summary_only:
            out["summary_only"] = True
        if self.server_median is not None:
            out["server_median"] = _r4(self.server_median)
        if self.error_sample:
            out["error_sample"] = self.error_sample
        return out


@dataclass
class Evidence:
    """A verdict with the numbers behind it: the query judged another way (against the
    common shift, against 1, unpaired, by chbench's rule under ``--method clickhouse``)."""

    verdict: str
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    reasoning: str | None = None

    def to_json(self, keys: tuple[str, ...]) -> dict[str, Any]:
        values = {"verdict": self.verdict, "ratio": self.ratio, "ci": _pair(self.ci), "p_value": self.p_value,
                  "p_adjusted": self.p_adjusted, "reasoning": self.reasoning}
        return {k: values[k] for k in keys}


def _pair(ci: tuple[float, float] | None) -> list[float | None] | None:
    """An interval for JSON: an end no data could bound (too few rounds) is null."""
    return None if ci is None else [finite_or_none(ci[0]), finite_or_none(ci[1])]


@dataclass
class BetweenRun:
    """Separate runs: the allowance for each run's own offset of the query's median."""

    sd: float
    source: str  # "factor", "queries' scatter", "scatter around the shift", "N/M sessions"
    half: float  # its share of the interval's half-width (log)


@dataclass
class ClickHouseDecision:
    """ClickHouse CI's rule for one query (stats/clickhouse.py)."""

    diff: float
    stat_threshold: float
    changed_threshold: float
    unstable_threshold: float

    def to_json(self) -> dict[str, Any]:
        return {"diff": self.diff, "stat_threshold": self.stat_threshold,
                "changed_threshold": self.changed_threshold, "unstable_threshold": self.unstable_threshold}


@dataclass
class QueryComparison:
    """One query, A against B: the verdict, the evidence for it, and what else was seen."""

    name: str
    verdict: str = NO_CHANGE
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    # the 90% interval "no change" was judged on (an equivalence test, stats/compare.py)
    equivalence_ci: tuple[float, float] | None = None
    p_adjusted: float | None = None
    a: SideSummary | None = None
    b: SideSummary | None = None
    flags: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why the runs cannot tell a threshold-sized change
    reasoning: str | None = None  # the evidence for the verdict, in full
    # a slower or faster query: what changed on the server (chbench/stats/explain.py), as
    # {"counters": [...], "operators": [...], "summary": "..."}; None otherwise
    why: dict[str, Any] | None = None
    reason: str | None = None  # the same, in a few words (console and Markdown tables)
    threshold: float | None = None  # the query's own threshold, where it differs
    between_run: BetweenRun | None = None
    paired: PairedResult | None = None
    unpaired: Evidence | None = None  # side by side: the pooled comparison, kept for one release
    vs_shift: Evidence | None = None
    vs_one: Evidence | None = None
    chbench: Evidence | None = None  # under --method clickhouse: chbench's own verdict
    clickhouse: ClickHouseDecision | None = None
    speed_verdict: str | None = None  # when the answer changed: the speed verdict it replaced
    answers: dict[str, Any] | None = None  # chbench upgrade's answer check
    plan_changed: bool | None = None
    pipeline_changed: bool | None = None
    label: str | None = None  # replay: the normalized query's words
    # separate runs: slower in this run, whose machine the probes show busier ("A"/"B"):
    # made unstable for it (stats/compare.py, _busier_machine)
    busier_machine: str | None = None
    # separate replays: slower in this side's replay, which overloaded the server ("A"/"B"):
    # made unstable for it (compare/build.py, _overloaded)
    overloaded_replay: str | None = None

    @property
    def tested(self) -> bool:
        """Judged by a statistical test (not only on one side, failed, skipped or summary-only)."""
        return self.p_value is not None

    @property
    def flagged(self) -> bool:
        return self.verdict in FLAGGED

    def beyond(self, limit: float, slower: bool) -> bool:
        """Whether the whole interval lies beyond ``limit`` (a ratio ≥ 1) that way: past
        what a busier machine can explain (``explains_up_to``, stats/machine.py)."""
        return self.ci is not None and (self.ci[0] > limit if slower else self.ci[1] < 1.0 / limit)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "verdict": self.verdict, "ratio": self.ratio, "ci": _pair(self.ci),
                               "p_value": self.p_value, "a": self.a.to_json() if self.a else None,
                               "b": self.b.to_json() if self.b else None, "flags": list(self.flags),
                               "reasons": list(self.reasons)}
        if self.label is not None:
            out["label"] = self.label
        if self.between_run is not None:
            out.update(between_run_sd=self.between_run.sd, between_run_from=self.between_run.source,
                       between_run_half=self.between_run.half)
        if self.equivalence_ci is not None:
            out["equivalence_ci"] = _pair(self.equivalence_ci)
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.p_adjusted is not None or self.reasoning is not None:
            out["p_adjusted"] = self.p_adjusted
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.why is not None:
            out["why"] = self.why
        if self.reason is not None:
            out["reason"] = self.reason
        if self.paired is not None:
            out["paired"] = self.paired.to_json()
        if self.unpaired is not None:
            out["unpaired"] = self.unpaired.to_json(("verdict", "ratio", "ci", "p_value", "p_adjusted", "reasoning"))
        if self.vs_shift is not None:
            out["vs_shift"] = self.vs_shift.to_json(("ratio", "ci", "p_adjusted", "verdict", "reasoning"))
        if self.vs_one is not None:
            out["vs_one"] = self.vs_one.to_json(("verdict", "ci", "p_adjusted", "reasoning"))
        if self.chbench is not None:
            out["chbench_verdict"], out["chbench_reasoning"] = self.chbench.verdict, self.chbench.reasoning
        if self.clickhouse is not None:
            out["clickhouse"] = self.clickhouse.to_json()
        if self.answers is not None:
            out["answers"] = self.answers
        if self.speed_verdict is not None:
            out["speed_verdict"] = self.speed_verdict
        if self.plan_changed is not None:
            out["plan_changed"] = self.plan_changed
            out["pipeline_changed"] = self.pipeline_changed
        return out


@dataclass
class CommonShift:
    """A shift all queries share (stats/shift.py)."""

    ratio: float
    ci: tuple[float, float]
    queries_sharing: int
    queries: int
    scatter_sd: float
    within_sd: float
    explained_by_machine: bool
    explained_by: str | None
    verdict: str
    finding: str | None  # "slower"/"faster": a global finding that counts like a flagged query
    why: str
    # the interval from the queries alone (bootstrap); ``ci`` adds the sessions' machine
    # levels (``level_half``, log) where there are sessions
    ci_queries: tuple[float, float] = (math.nan, math.nan)
    level_half: float = 0.0
    # separate runs: the machine may explain it (the reference task moved its way, not
    # significantly) — neither taken out nor the engine's finding; what was seen, or None
    machine_may: str | None = None
    may_by: str | None = None  # who may explain it: "machine" (probes, reference task, none) or "runs" (their levels)

    def to_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "ci": _pair(self.ci), "ci_queries": _pair(self.ci_queries),
                "level_half": self.level_half, "queries_sharing": self.queries_sharing,
                "queries": self.queries, "scatter_sd": self.scatter_sd, "within_sd": self.within_sd,
                "explained_by_machine": self.explained_by_machine, "explained_by": self.explained_by,
                "machine_may": self.machine_may, "may_by": self.may_by, "verdict": self.verdict,
                "finding": self.finding, "why": self.why}


@dataclass
class Geomean:
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    queries: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "ci": _pair(self.ci), "queries": self.queries}


@dataclass
class ComparisonSummary:
    """What holds for the comparison as a whole."""

    verdicts: dict[str, int]
    geomean: Geomean
    total_median_ms: dict[str, float | None]  # a, b, ratio; queries: how many (a median on both sides)
    threshold: float
    alpha: float
    correction: str
    machine: dict[str, Any] | None = None  # both runs' machine state (stats/machine.py, compare/build.py)
    shift: CommonShift | None = None
    paired: int = 0  # queries judged on paired rounds
    answers_changed: int | None = None  # chbench upgrade
    plans_changed: int | None = None
    set_aside: dict[str, Any] | None = None  # separate runs: rounds left out of the verdicts, and why
    round_factors: dict[str, Any] | None = None  # separate runs: per side, the machine factors taken out
    # sessions: how far their machine levels moved (stats/compare.py, sessions_level)
    session_levels: dict[str, Any] | None = None
    # one session per side: the queries' scatter against the guess, and which was used
    scatter: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"verdicts": dict(self.verdicts), "geomean": self.geomean.to_json(),
               "total_median_ms": dict(self.total_median_ms), "threshold": self.threshold, "alpha": self.alpha,
               "correction": self.correction, "machine": self.machine,
               "shift": self.shift.to_json() if self.shift else None, "paired": self.paired}
        if self.answers_changed is not None:
            out["answers_changed"] = self.answers_changed
            out["plans_changed"] = self.plans_changed
        if self.set_aside is not None:
            out["set_aside"] = self.set_aside
        if self.round_factors is not None:
            out["round_factors"] = self.round_factors
        if self.session_levels is not None:
            out["session_levels"] = self.session_levels
        if self.scatter is not None:
            out["scatter"] = self.scatter
        return out


def count_verdicts(rows: list[QueryComparison]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return counts


@dataclass
class ComparisonResult:
    """Every query's comparison and the summary: what ``compare_queries`` returns."""

    queries: list[QueryComparison]
    summary: ComparisonSummary

    def recount(self) -> None:
        self.summary.verdicts = count_verdicts(self.queries)

    def query(self, name: str) -> QueryComparison | None:
        return next((q for q in self.queries if q.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"queries": [q.to_json() for q in self.queries], "summary": self.summary.to_json()}


def pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}"


def finite_ratio(r: QueryComparison) -> float | None:
    return r.ratio if r.ratio is not None and math.isfinite(r.ratio) and r.ratio > 0 else None
