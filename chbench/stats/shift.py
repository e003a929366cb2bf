"""A shift common to all queries, stated once (docs/statistics.md, "Common shift").

Two separate runs on a machine whose speed moved in between show every query slower (or
faster) together. The common shift is the median of the per-query log ratios; its 95%
interval comes from a bootstrap over queries in which each resampled query also brings
one of its own bootstrap replicates, so both the spread between queries and each
query's own noise count. It is reported when its interval excludes 1 and most queries
(≥ 60%, at least 3) moved with it — within the threshold of it.

Then every query is judged against the shift as well as against 1. When the machine
explains the shift (its probes show the run in the shift's direction busier; for files
without probes, a material change of the calibration query in the same direction), the
verdicts are those against the shift: the machine's drift is taken out, and a query
that moved differently from the rest still stands out. A shift the machine does not
explain is the engine's (or its configuration's): a global finding of its own. Between
separate runs whose files tell nothing of the machine (no probes, no calibration
query), the shift is machine or engine, not told apart: no finding either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from chbench.stats.paired import Z95
from chbench.stats.verdict import (
    FLAGGED,
    NO_CHANGE,
    UNSTABLE,
    CommonShift,
    Evidence,
    QueryComparison,
    finite_ratio,
    pct,
)

SHARING = 0.6  # "most queries": the share that must move with the shift
MIN_QUERIES = 4
# separate runs, nothing known of either machine: seen (2026-12-05) on an A/A pair nine
# minutes apart, run B with --no-probes: every query -15% together, 6 of 10 called
# `faster` as "a global change of the engine"; nothing had changed but the hour (the next
# A/A pair, both with probes: B's reference task +30%, the machine's)
UNKNOWN_MACHINE = "the files do not both hold machine probes or calibration queries"
# separate runs of one session each: the level every query shares moves from run to run by
# itself. Measured (2026-12-07, 10 + 10 runs of the built-in suite back to back, embedded
# 26.9, --iterations 15): the runs' levels (each run's median over queries of their log
# medians) spread with sd 1.9% and 2.4%, while the reference task, which times the machine
# alone, stayed within ±1% — the engine's process, not the machine. So two runs' levels
# differ by up to ±6% (95%) with nothing changed: one A/A pair moved -5.4% together and 6
# of its 10 queries were called faster as "a global change of the engine". --sessions
# measures this level (compare.sessions_level: 0.9–6.2% sd, 2026-12-03); one session
# cannot, so a shift within 1.96 × √2 × RUN_LEVEL_SD is the runs' level or the
# engine's, not told apart: one whose interval, widened by two runs' levels, reaches 1.
RUN_LEVEL_SD = 0.022
RUN_LEVEL_HALF = Z95 * math.sqrt(2) * RUN_LEVEL_SD  # 95%, log: ±6.3%
WHO_MAY = {"machine": "the machine", "runs": "the runs' own levels"}  # CommonShift.may_by, as the lines name it


def who_may(by: str | None) -> str:
    """What may explain a shift (``CommonShift.may_by``), as the lines name it."""
    return WHO_MAY[by or "machine"]


@dataclass(frozen=True)
class Scatter:
    """How far the queries' log ratios lie from their common level: measured between-run
    spread of a typical query, for two separate runs of one session each."""

    centre: float  # median of the queries' log ratios
    sd: float  # sd of their deviations from it, those beyond 3 robust sds left out
    within: float  # a typical query's own sd (median of their bootstrap sds), part of ``sd``
    kept: int  # queries the sd was measured on: its degrees of freedom are kept - 1


def scatter_of(rows: list[QueryComparison], boots: dict[int, np.ndarray], tested: list[int],
               min_queries: int = MIN_QUERIES) -> Scatter | None:
    """The queries' scatter around their common level, or None with too few queries."""
    idx = [i for i in tested if i in boots and finite_ratio(rows[i]) is not None]
    if len(idx) < min_queries:
        return None
    logs = np.log([float(rows[i].ratio or 1.0) for i in idx])
    centre = float(np.median(logs))
    # the sd of the queries' deviations with those beyond 3 robust sds (1.4826 x MAD)
    # left out, so a query that moved differently does not widen everyone's interval; a
    # plain sd of the rest rather than the MAD itself, which over 10 queries is a far
    # noisier estimate (37% efficiency)
    dev = logs - centre
    mad_sd = 1.4826 * float(np.median(np.abs(dev)))
    kept = dev[np.abs(dev) <= 3 * mad_sd] if mad_sd > 0 else dev
    sd = float(np.sqrt(np.sum(kept ** 2) / max(1, len(kept) - 1)))
    within = float(np.median([np.std(boots[i]) for i in idx]))  # a typical query's own sd (its bootstrap)
    return Scatter(centre, sd, within, len(kept))


def common_shift(rows: list[QueryComparison], boots: dict[int, np.ndarray], tested: list[int], threshold: float,
                 machine: dict[str, Any] | None, rng: np.random.Generator,
                 level: tuple[float, int] | None = None, separate: bool = False) -> CommonShift | None:
    """The shift all queries share, or None (too few queries, none, or not shared).
    ``level``: with sessions, the standard error their machine levels leave on the level
    all queries share, and its degrees of freedom — added to the interval, for the round
    factors took those levels out of every query's runs (stats/rounds.py). ``machine``
    None: side by side, unless ``separate`` (then nothing is known of the machines)."""
    sc = scatter_of(rows, boots, tested)
    if sc is None:
        return None
    idx = [i for i in tested if i in boots and finite_ratio(rows[i]) is not None]
    logs = np.log([float(rows[i].ratio or 1.0) for i in idx])
    centre, scatter, within = sc.centre, sc.sd, sc.within
    reps = np.vstack([boots[i] for i in idx])  # queries × replicates
    n, m = reps.shape
    pick = rng.integers(0, n, (m, n))
    lo, hi = np.percentile(np.median(reps[pick, np.arange(m)[:, None]], axis=1), [2.5, 97.5])
    ci_queries = (float(math.exp(lo)), float(math.exp(hi)))
    level_half = 0.0
    if level is not None:
        from chbench.stats.compare import t95

        level_half = t95(level[1]) * level[0]
        lo, hi = centre - math.hypot(centre - lo, level_half), centre + math.hypot(hi - centre, level_half)
    sharing = int(np.sum(np.abs(logs - centre) <= math.log1p(threshold)))
    if not (lo > 0 or hi < 0) or sharing < max(3, math.ceil(SHARING * n)):
        return None
    ratio = math.exp(centre)
    # most queries' intervals beyond what the busier run's state can explain (stats/machine.py,
    # the bound a query slower on the busier machine is held to): the engine's, whatever the
    # machine did. Seen (2026-12-06, 3–6 s runs, max_threads=1 against the default): +70–90%
    # on nine queries called "the machine may explain it" with the reference task +3–15%.
    # Not the shift's own interval: it resamples the queries, and one that did not move (a
    # single-threaded join) put its low end at +23% under a +73% shift
    limit = float((machine or {}).get("explains_up_to") or math.inf)
    beyond_machine = 2 * sum(rows[i].beyond(limit, centre > 0) for i in idx) > len(idx)
    explained, by = (False, None) if beyond_machine else _explained(centre, machine)
    beyond = abs(centre) >= math.log1p(threshold)
    # (a shift within the threshold makes no finding and no query's: apply_shift)
    may, may_by = None, None  # what may explain it, and who: "machine" or "runs" (set with ``may``)
    if not (explained or beyond_machine):
        may = _machine_may(centre, machine, separate)
        may_by = "machine" if may else None
        if may is None and beyond:
            may = _runs_level_may(centre, (hi - lo) / 2, level, separate)
            may_by = "runs" if may else None
    verdict = ("slower" if centre > 0 else "faster") if beyond else "no change"
    return CommonShift(
        ratio=ratio, ci=(float(math.exp(lo)), float(math.exp(hi))), ci_queries=ci_queries, level_half=level_half,
        queries_sharing=sharing, queries=n,
        scatter_sd=scatter, within_sd=within, explained_by_machine=explained, explained_by=by, verdict=verdict,
        # a global finding that counts like a slower query: beyond the threshold and not the machine's
        finding=verdict if verdict != "no change" and not explained and not may else None,
        why=_why(ratio, lo, hi, sharing, n, verdict, explained, by, threshold, machine, level_half, may,
                 limit if beyond_machine else None, may_by),
        machine_may=may, may_by=may_by)


def _explained(centre: float, machine: dict[str, Any] | None) -> tuple[bool, str | None]:
    """Whether the machine's state explains a shift in this direction, and by what."""
    if not machine:
        return False, None
    slower_side = "B" if centre > 0 else "A"
    if machine.get("probes"):
        return machine.get("busier") == slower_side, "probes" if machine.get("busier") == slower_side else None
    cal = machine.get("calibration_ratio")
    if machine.get("calibration_material") and cal and (cal > 1) == (centre > 0):
        return True, "calibration query"
    return False, None


def _machine_may(centre: float, machine: dict[str, Any] | None, separate: bool) -> str | None:
    """Separate runs whose probes name no busier run while the reference task moved the
    shift's way, not significantly (``maybe_busier``, stats/machine.py), or whose files
    tell nothing of the machine: the machine may explain the shift. What was seen, or None."""
    if separate and machine is None:
        return UNKNOWN_MACHINE
    if not machine or machine.get("maybe_busier") != ("B" if centre > 0 else "A"):
        return None
    return str(machine.get("maybe_why") or "reference task")


def _runs_level_may(centre: float, half: float, level: tuple[float, int] | None, separate: bool) -> str | None:
    """Separate runs without sessions (their level unmeasured): a shift whose interval
    (half-width ``half``, log), widened by two runs' own levels (RUN_LEVEL_HALF), reaches
    1 may be theirs."""
    if not separate or level is not None or abs(centre) > math.hypot(half, RUN_LEVEL_HALF):
        return None
    return (f"two runs' levels differ by up to ±{math.expm1(RUN_LEVEL_HALF):.1%} with nothing changed, and one "
            "session a side cannot measure theirs; --sessions 3 does")


def _why(ratio: float, lo: float, hi: float, sharing: int, n: int, verdict: str, explained: bool,
         by: str | None, threshold: float, machine: dict[str, Any] | None, level_half: float = 0.0,
         may: str | None = None, beyond: float | None = None, may_by: str | None = None) -> str:
    head = (f"{sharing} of {n} queries moved together: {pct(ratio)} "
            f"[{pct(math.exp(lo))}, {pct(math.exp(hi))}]")
    if level_half:
        head += f" (the sessions' machine levels ±{math.expm1(level_half):.1%} included)"
    if explained and by == "probes":
        return f"{head}; the probes show the machine busier in that run → machine, not engine: taken out of " \
               "each query's verdict"
    if explained:
        return f"{head}; the calibration query moved the same way (no probes in these files) → machine: " \
               "taken out of each query's verdict"
    if verdict == "no change":
        edge = math.expm1(hi) if hi >= -lo else math.expm1(lo)
        if abs(edge) >= threshold:  # the estimate is within it, the interval not: said, not hidden
            return (f"{head}; within ±{threshold:.0%}, though its 95% interval reaches {edge:+.1%} (a shift that "
                    "size not ruled out): not a finding")
        return f"{head}; within ±{threshold:.0%}: not a finding"
    if beyond is not None:
        return (f"{head}; most queries beyond the {pct(beyond)} the machine's state can explain → a global "
                f"change of the engine or its configuration: {verdict}")
    if may:
        seen = "" if may == UNKNOWN_MACHINE else "the probes name no busier run, but "
        return (f"{head}; {seen}{who_may(may_by)} may explain it ({may}): machine or engine, not told apart — not a "
                "finding; a query beyond the threshold only with this shift counted in is unstable")
    if machine is None:  # side by side: both sides shared the machine
        return f"{head}, on a machine both sides shared → a global change of the engine or its configuration: {verdict}"
    if not machine.get("probes"):
        return (f"{head}; no machine probes in these files and the calibration query did not move the same way "
                f"→ taken as a global change of the engine or its configuration: {verdict}")
    return (f"{head}; the machine probes do not explain it → a global change of the engine or its "
            f"configuration: {verdict}")


def apply_shift(rows: list[QueryComparison], against: list[QueryComparison], tested: list[int],
                shift: CommonShift, threshold: float, separate: bool) -> None:
    """Each tested query judged against the shift too; the shift taken out of the
    verdicts when the machine explains it. Separate runs (whose machines differ): a
    shift within the threshold that the machine does not explain still makes no
    query's finding — a query beyond the threshold only with it counted in is
    ``unstable``. Side by side both sides shared the machine: such a shift is the
    engine's, and the verdicts against 1 stand."""
    for i in tested:
        r, s = rows[i], against[i]
        r.vs_shift = Evidence(s.verdict, s.ratio, s.ci, p_adjusted=s.p_adjusted, reasoning=s.reasoning)
        if shift.explained_by_machine:
            r.vs_one = Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
            r.verdict, r.reasons, r.p_adjusted = s.verdict, s.reasons, s.p_adjusted
            r.equivalence_ci = s.equivalence_ci  # what a "no change" against the shift was judged on
            # the table shows the change against 1 next to it: say what the verdict is against
            # (seen: "no change +23.1% [+13.6%, +33.3%], within ±2.4%" on a machine +21.5% busier)
            r.reason = f"{pct(s.ratio or 1.0)} vs the machine's {pct(shift.ratio)}: {s.reason}"
            lo, hi = s.ci or (math.nan, math.nan)
            r.reasoning = (f"against the machine's common shift ({pct(shift.ratio)}): {pct(s.ratio or 1.0)} "
                     f"[{pct(lo)}, {pct(hi)}], {s.reasoning}")
            r.flags = list(s.flags)
        elif separate and r.verdict in FLAGGED and shift.machine_may and s.verdict != r.verdict:
            # a shift the machine may explain makes no query's finding either
            r.vs_one = Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
            r.verdict = UNSTABLE
            r.reasons = [f"{pct(r.ratio or 1.0)} against 1 but {pct(s.ratio or 1.0)} against the common shift "
                         f"({pct(shift.ratio)}), which {who_may(shift.may_by)} may explain "
                         f"({shift.machine_may})"]
            r.reasoning = "cannot tell a change from the runs' common shift: " + r.reasons[0]
            r.reason = f"beyond ±{threshold:.0%} only with a shift {who_may(shift.may_by)} may explain"
        elif separate and r.verdict in FLAGGED and shift.verdict == NO_CHANGE and s.verdict != r.verdict:
            # a shift within the threshold is no finding, so it must not make one: a query
            # beyond the threshold only with the shift counted in is the shift's doing,
            # machine or engine (an A/A pair on the embedded engine: all queries -2.8%,
            # one -6.6% [-9.8%, -3.2%] was called faster; against the shift it is -3.8%)
            r.vs_one = Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
            r.verdict = UNSTABLE
            r.reasons = [f"{pct(r.ratio or 1.0)} against 1 but {pct(s.ratio or 1.0)} against the common shift "
                         f"({pct(shift.ratio)}, within ±{threshold:.0%}): beyond the threshold only with the shift "
                         "counted in"]
            r.reasoning = "cannot tell a change from the runs' common shift: " + r.reasons[0]
            r.reason = f"beyond ±{threshold:.0%} only with the common shift"
        elif s.verdict in ("slower", "faster"):
            r.flags.append(f"moved differently from the rest: {pct(s.ratio or 1.0)} against the common shift "
                           f"({pct(shift.ratio)}), {s.verdict} than the others")
