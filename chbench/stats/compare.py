"""Comparing two sides query by query: ratio, interval, test, verdict, flags, summary.

Method (documented in docs/statistics.md):
* ratio = median(B) / median(A) of the compared metric (client_ms by default);
* its 95% interval by bootstrap (percentile, resampling each side independently);
* p-value from the two-sided Mann–Whitney U test (rank-based: suits skewed latencies),
  adjusted with Holm's method across all compared queries;
* ``slower``/``faster`` only when the adjusted p < alpha, the interval excludes 1 and the
  ratio is beyond the threshold; ``unstable`` when the noise is too wide to tell a
  threshold-sized change (interval wider than ±threshold, too few runs, bimodal,
  drifting); ``no change`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chbench.stats.paired import MIN_PAIRS, Z95, Pairs, analyse, bootstrap, pair_up, resampled_medians
from chbench.stats.stopping import equivalence_interval, equivalent
from chbench.stats.summary import instability_reasons, median_ci, percentiles, rel_mad, relative_ci_halfwidth
from chbench.stats.verdict import (
    FAILED,
    FAILS_ON_B,
    FASTER,
    FLAGGED,
    NO_CHANGE,
    ONLY_IN_A,
    ONLY_IN_B,
    SKIPPED,
    SLOWER,
    UNSTABLE,
    BetweenRun,
    ComparisonResult,
    ComparisonSummary,
    Evidence,
    Geomean,
    QueryComparison,
    SideSummary,
    count_verdicts,
    finite_ratio,
    pct,
)

BOOTSTRAP = 2000
SEED = 20261130
TOO_SHORT_MS = 50.0
# separate runs: a query's median moves from run to run by about this many times its
# run-to-run spread (relative MAD, both sides in quadrature). 0.7 was measured on 8 runs
# of the built-in suite (bench/bars.py); on 2026-12-01 two clean A/A pairs moved by
# 0.6–1.2x and the noise simulator fitted to that day's runs gave 1.1% false alarms per
# query at 0.7 and 0.65% at 0.8 (bench/verdict_bars.py --only simulate, docs/statistics.md)
BETWEEN_RUN_FACTOR = 0.8
# ... unless measured: two separate runs of ten queries gave ratios scattering 1.1–2.4%
# around their common level while that factor allowed ±7–14% (2026-12-03, bench/
# verdict_bars.py --only separate); the scatter is the between-run spread those runs
# showed. Six queries at least (Student's t with 5 degrees of freedom: 2.57 for 1.96)
MEASURED_FROM = 6
# ... and only where it can be the machine's: beyond this many times the guess, it is the
# queries' own changes (an upgrade), not the runs' offsets (_scatter_check)
SCATTER_LIMIT = 3.0


@dataclass
class SideData:
    """One side of one query, as loaded from a results file."""

    times: list[float] = field(default_factory=list)  # successful runs, in run order (ms)
    server_times: list[float] = field(default_factory=list)
    client_times: list[float] = field(default_factory=list)
    errors: int = 0
    error_sample: str | None = None
    summary: dict[str, float] | None = None  # foreign files without raw samples
    summary_runs: int | None = None  # how many runs such a file says it summarizes
    sql: str | None = None
    sessions: list[list[float]] = field(default_factory=list)  # times per session, when there are several
    skipped: str | None = None  # why this side did not run it (a performance test's missing table, …)
    # (session, round) of each of ``times``, where the file records them: a side-by-side
    # run's two sides are paired by it (stats/paired.py)
    keys: list[tuple[int, int]] = field(default_factory=list)
    # when each of ``times`` started (epoch s), where recorded: in a round of three or more
    # sides, who ran first in a pair is read from these, not from the round's parity
    starts: list[float | None] = field(default_factory=list)
    raw_times: list[float] | None = None  # before the round factors were taken out (separate runs)
    round_spread: float | None = None  # then: the robust sd of the side's round factors (log)
    session_levels: list[float] = field(default_factory=list)  # then: each session's level taken out (log)
    # ``times`` are in the order the machine ran them, so a trend or two clusters among
    # them is the machine's (False: a replay's, in its workload's order — compare/sides.py)
    ordered: bool = True

    @property
    def summary_only(self) -> bool:
        return not self.times and self.summary is not None

    def scaled(self, factor: float) -> SideData:
        """The same runs with every time multiplied by ``factor`` (a shift taken out)."""
        return SideData(times=[t * factor for t in self.times], server_times=[t * factor for t in self.server_times],
                        client_times=[t * factor for t in self.client_times], errors=self.errors,
                        error_sample=self.error_sample, summary=self.summary, sql=self.sql,
                        sessions=[[t * factor for t in s] for s in self.sessions], skipped=self.skipped,
                        keys=list(self.keys),
                        raw_times=None if self.raw_times is None else [t * factor for t in self.raw_times],
                        round_spread=self.round_spread, session_levels=list(self.session_levels),
                        ordered=self.ordered)

    def run_spread(self) -> float:
        """The query's run-to-run spread as measured (relative MAD). With round factors
        taken out, its own (what remains) and the machine's (the side's round factors,
        estimated from every query at once) — 15 runs alone can put one query's MAD at a
        quarter of its true value, and its between-run allowance with it."""
        if self.round_spread is not None:
            return math.hypot(rel_mad(self.times), 0.6745 * self.round_spread)
        return rel_mad(self.raw_times or self.times)

    def keyed(self) -> list[tuple[tuple[int, int], float]]:
        """(session, round) and time of each successful run; empty when not recorded."""
        return list(zip(self.keys, self.times, strict=True)) if len(self.keys) == len(self.times) else []

    def median(self) -> float | None:
        if self.times:
            return float(np.median(self.times))
        if self.summary and "median" in self.summary:
            return float(self.summary["median"])
        return None


@dataclass
class Options:
    threshold: float = 0.05
    alpha: float = 0.05
    correction: str = "holm"  # holm | bh | none
    min_runs: int = 5
    # separate runs only: between-run spread of a query's median, as a multiple of its
    # within-run relative MAD (measured on the reference machine: bench/bars.py)
    between_run: float = 0.0
    # judged against a common shift: the spread of the queries around it, measured
    # (robust sd of their log ratios' deviations), in place of the factor above
    between_run_sd: float | None = None
    typical_within_sd: float = 0.0  # the typical query's own (bootstrap) sd, part of that scatter
    # separate runs of one session each: measure the between-run spread as the queries'
    # scatter around their common level (``between_run_sd``) when MEASURED_FROM queries
    # or more were tested; ``between_run`` is then only the fallback for fewer
    measure_between: bool = False
    # separate files of different configurations (server version, the user's settings): what
    # changed, said where the queries' scatter is taken for their own changes (_scatter_check)
    configuration_changed: str | None = None
    between_df: int | None = None  # degrees of freedom of a measured ``between_run_sd`` (Student's t)
    # per query, a larger threshold its author set (a performance test's max_ignored_relative_change)
    query_thresholds: dict[str, float] = field(default_factory=dict)
    # side by side: judge each query on its per-round log ratios (stats/paired.py)
    paired: bool = False
    # two separate runs (not one side-by-side file): a machine state or a between-run
    # factor says so too; needed where neither is there (files without probes)
    separate: bool = False
    # sessions with round factors taken out: the standard error (log) their machine levels
    # leave on the level every query shares, and its degrees of freedom (sessions_level)
    common_level: tuple[float, int] | None = None

    def for_query(self, name: str) -> Options:
        own = self.query_thresholds.get(name)
        return replace(self, threshold=own) if own is not None and own > self.threshold else self


def holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adj = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adj[i] = running
    return adj


def benjamini_hochberg(pvalues: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (scipy's)."""
    from scipy import stats as sps

    return [float(p) for p in sps.false_discovery_control(pvalues, method="bh")]


def bootstrap_log_ratios(a: list[float], b: list[float], rng: np.random.Generator) -> np.ndarray:
    ma = resampled_medians(a, rng, BOOTSTRAP)
    mb = resampled_medians(b, rng, BOOTSTRAP)
    out: np.ndarray = np.log(mb) - np.log(ma)
    return out


def ratio_interval(a: list[float], b: list[float], seed: int) -> tuple[float, float, float]:
    """median(b) / median(a) and the 95% bootstrap interval of its log (low, high)."""
    lo, hi = np.percentile(bootstrap_log_ratios(a, b, np.random.default_rng(seed)), [2.5, 97.5])
    return float(np.median(b) / np.median(a)), float(lo), float(hi)


def side_summary(s: SideData | None) -> SideSummary | None:
    """One side described as measured (before any round factors were taken out), its
    numbers rounded as the JSON prints them (4 decimals), so every report shows exactly
    what ``compare --format json`` says."""
    if s is None:
        return None
    out = SideSummary(runs=len(s.times) or (s.summary_runs or 0), errors=s.errors, error_sample=s.error_sample)
    measured = s.raw_times or s.times
    if measured:
        out.stats = {k: round(v, 4) for k, v in percentiles(measured).items()}
        lo, hi = median_ci(measured)
        out.median_ci = (round(lo, 4), round(hi, 4))
    elif s.summary:
        out.stats = {k: round(v, 4) for k, v in s.summary.items()}
        out.summary_only = True
    if s.server_times:
        out.server_median = round(float(np.median(s.server_times)), 4)
    return out


def compare_queries(
    names: list[str],
    side_a: dict[str, SideData],
    side_b: dict[str, SideData],
    opts: Options,
    machine: dict[str, Any] | None = None,
) -> ComparisonResult:
    """The whole comparison: every query's verdict with its evidence, and the summary.

    Every query is judged against 1 (no change). When all queries moved together
    (``stats/shift.py``), each is judged against that common shift too; a shift the
    machine explains (its probes, ``stats/machine.py``) is taken out of every verdict.
    Side by side (``opts.paired``) each query is judged on its per-round ratios
    (``stats/paired.py``), the pooled comparison kept next to it (``unpaired``)."""
    from chbench.stats.shift import apply_shift, common_shift, scatter_of

    # the legacy drift guard: intervals widened by the calibration query's change, where
    # no common shift can be taken out instead
    widen = float(machine["log_change_bound"]) if machine and machine.get("log_change_bound") else 0.0
    unpaired = None
    if opts.paired:  # the pooled comparison, kept next to the paired one for a release
        unpaired, _, _ = _judge(names, side_a, side_b, replace(opts, paired=False), np.random.default_rng(SEED),
                                0.0)
    level = sessions_level(side_a, side_b) if opts.between_run and not opts.paired else None
    if level is not None:
        opts = replace(opts, common_level=(level["se"], level["df"]))
    rows, boots, tested = _judge(names, side_a, side_b, opts, np.random.default_rng(SEED), 0.0)
    measured, scatter = None, None
    if opts.measure_between and opts.between_run and opts.between_run_sd is None:
        measured = scatter_of(rows, boots, tested, MEASURED_FROM)
        if measured is not None:
            scatter = _scatter_check(measured.sd, [(side_a[names[i]], side_b[names[i]]) for i in tested], opts)
            if scatter["used"] == "guess":
                measured = None
        if measured is not None:  # each query judged again, on the spread the queries showed
            opts = replace(opts, between_run_sd=measured.sd, typical_within_sd=measured.within,
                           between_df=measured.kept - 1)
            rows, boots, tested = _judge(names, side_a, side_b, opts, np.random.default_rng(SEED), 0.0)
    separate = opts.separate or machine is not None or opts.between_run > 0
    shift = common_shift(rows, boots, tested, opts.threshold, machine, np.random.default_rng(SEED + 2),
                         opts.common_level, separate)
    if shift is not None:
        scaled = {n: d.scaled(1.0 / shift.ratio) for n, d in side_b.items()}
        # against the shift, the level all queries share cancels: only the queries' part
        # of its interval counts (not the sessions' machine levels)
        half = (math.log(shift.ci_queries[1]) - math.log(shift.ci_queries[0])) / 2
        # against a shift the machine explains, a query must move beyond the threshold
        # *plus* the machine's own shift to be called slower/faster: a busier machine does
        # not slow every query alike (measured: a neighbour at 30% of a core moved the
        # built-in queries by +2% to +23% while most moved +9%; bench/drift_bars.py)
        machine_step = abs(math.log(shift.ratio)) if shift.explained_by_machine else 0.0
        shifted = replace(opts, between_run_sd=shift.scatter_sd, typical_within_sd=shift.within_sd) \
            if shift.explained_by_machine and measured is None else opts
        shifted = replace(shifted, common_level=None)
        against, _, _ = _judge(names, side_a, scaled, shifted, np.random.default_rng(SEED), 0.0, half, machine_step)
        apply_shift(rows, against, tested, shift, opts.threshold, separate=separate)
    elif widen:
        rows, boots, tested = _judge(names, side_a, side_b, opts, np.random.default_rng(SEED), widen)
    elif opts.separate and machine is None:
        _level_unknown(rows, tested, [i for i, n in enumerate(names) if n in side_a and n in side_b
                                      and sessions_measure_level(side_a[n], side_b[n])])
    if machine and (machine.get("busier") or machine.get("maybe_busier")) in ("A", "B"):
        _busier_machine(rows, tested, machine)
    if unpaired is not None:
        for row, u in zip(rows, unpaired, strict=True):
            if row.paired is not None:
                row.unpaired = Evidence(u.verdict, u.ratio, u.ci, u.p_value, u.p_adjusted, u.reasoning)
    summary = _summary(rows, boots, side_a, side_b, names, machine, opts)
    summary.shift = shift
    summary.session_levels = level
    summary.scatter = scatter
    summary.paired = sum(1 for r in rows if r.paired is not None)
    return ComparisonResult(rows, summary)


def _scatter_check(sd: float, sides: list[tuple[SideData, SideData]], opts: Options) -> dict[str, Any]:
    """Whether the queries' scatter around their common level can be the machine's offsets
    of two runs of one configuration. Measured: A/A pairs scattered 1.1–2.4% where the guess
    from each query's run-to-run spread allowed ±7–14%; a neighbour that moved queries by
    +2% to +23% scattered them about 6%. Nightly files either side of an upgrade (24.8 →
    26.9, 2026-12-06) scattered 43%, each query changed by its own amount: as a between-run
    spread, ±166% for every query, all `unstable`. Where the files' configurations differ
    (server version, the user's settings) and the scatter is beyond ``SCATTER_LIMIT`` × the
    typical guess, it is the queries' own changes, and each query's spread is guessed.
    Files of one configuration keep their scatter, however wide: it can only be the runs'."""
    guess = float(np.median([opts.between_run * math.hypot(a.run_spread(), b.run_spread()) for a, b in sides]))
    wide = guess > 0 and sd > SCATTER_LIMIT * guess
    used = "guess" if wide and opts.configuration_changed else "scatter"
    return {"scatter_sd": round(sd, 4), "guess_sd": round(guess, 4), "limit": SCATTER_LIMIT, "used": used,
            "configuration_changed": opts.configuration_changed}


def _judge(names: list[str], side_a: dict[str, SideData], side_b: dict[str, SideData], opts: Options,
           rng: np.random.Generator, widen: float, extra_half: float = 0.0, machine_step: float = 0.0,
           ) -> tuple[list[QueryComparison], dict[int, np.ndarray], list[int]]:
    """Each query's row, test and verdict; the bootstraps and which rows were tested."""
    rows: list[QueryComparison] = []
    boots: dict[int, np.ndarray] = {}
    tested: list[int] = []
    for name in names:
        a, b = side_a.get(name), side_b.get(name)
        row = _new_row(name, a, b)
        rows.append(row)
        if a is None or b is None or row.verdict in (FAILED, FAILS_ON_B, SKIPPED):
            continue
        _flags(row, a, b)
        if a.summary_only or b.summary_only:
            row.flags.append("summary numbers only: weaker verdict")
            _summary_verdict(row, a, b, opts.for_query(name).threshold)
            continue
        # paired where the file recorded rounds (a load's or a replay's times have none:
        # nothing to pair, nothing to flag)
        pairs = pair_up(a.keyed(), b.keyed(), _a_first(a, b)) if opts.paired and (a.keys or b.keys) else None
        if pairs is not None and len(pairs) >= max(opts.min_runs, MIN_PAIRS):
            boots[len(rows) - 1] = _test_paired(row, pairs, opts.for_query(name), rng)
        else:
            if pairs is not None:
                row.flags.append(f"only {len(pairs)} rounds with both sides: judged unpaired")
            boots[len(rows) - 1] = _test(row, a, b, opts.for_query(name), rng, widen, extra_half)
        tested.append(len(rows) - 1)
    _verdicts(rows, tested, opts, widen, machine_step)
    return rows, boots, tested


def _new_row(name: str, a: SideData | None, b: SideData | None) -> QueryComparison:
    """A query's row, with the verdicts that need no test: only on one side, failed."""
    row = QueryComparison(name=name, a=side_summary(a), b=side_summary(b))
    if a is None or b is None:
        row.verdict = ONLY_IN_A if b is None else ONLY_IN_B
        return row
    if a.skipped or b.skipped:
        row.verdict = SKIPPED
        row.reasons = [str(a.skipped)] if a.skipped == b.skipped else \
            [f"{label}: {s.skipped}" for label, s in (("A", a), ("B", b)) if s.skipped]
        return row
    zero = [label for label, s in (("A", a), ("B", b)) if any(t <= 0 for t in s.times)]
    if zero:  # whole milliseconds (a query_log's duration) or a foreign file's rounding: log 0 was a traceback
        row.verdict = SKIPPED
        row.reasons = [f"{' and '.join(zero)}: times of 0 ms, below the metric's resolution: no ratio to judge"]
        return row
    a_failed = not a.times and not a.summary_only
    b_failed = not b.times and not b.summary_only
    if a_failed or b_failed:
        row.verdict = FAILED
        if a_failed and not b_failed:
            row.flags.append("fails in A only")
        elif b_failed and not a_failed:
            row.verdict = FAILS_ON_B
            row.flags.append("fails in B only (backward-incompatible?)")
        else:
            row.flags.append("fails on both sides")
        # what the server said, where a run recorded it (a failed set-up records no run)
        row.reasons = [f"{label}: {s.error_sample}" for label, s, failed in (("A", a, a_failed), ("B", b, b_failed))
                       if failed and s.error_sample]
    return row


def _flags(row: QueryComparison, a: SideData, b: SideData) -> None:
    """The ratio of medians, and flags as ClickHouse's performance report has them."""
    if a.errors and not b.errors:
        row.flags.append(f"errors in A only ({a.errors})")
    elif b.errors and not a.errors:
        row.flags.append(f"errors in B only ({b.errors})")
    ma, mb = a.median(), b.median()
    assert ma is not None and mb is not None
    row.ratio = mb / ma if ma > 0 else math.inf
    if min(ma, mb) < TOO_SHORT_MS:
        row.flags.append(f"too short to measure well (< {TOO_SHORT_MS:.0f} ms)")
    for label, s in (("A", a), ("B", b)):
        if s.server_times and s.client_times:
            cm, sm = float(np.median(s.client_times)), float(np.median(s.server_times))
            if cm - sm > max(5.0, 0.5 * sm):
                row.flags.append(f"slow on client in {label} (client {cm:.0f} ms vs server {sm:.0f} ms)")


def _test(row: QueryComparison, a: SideData, b: SideData, opts: Options, rng: np.random.Generator,
          widen: float, extra_half: float = 0.0) -> np.ndarray:
    """Interval (bootstrap, widened for separate runs and machine drift), p-value and the
    reasons the runs cannot tell a threshold-sized change; returns the bootstrap."""
    from scipy import stats as sps

    thr = opts.threshold
    lb = bootstrap_log_ratios(a.times, b.times, rng)
    lo, hi = np.percentile(lb, [2.5, 97.5])
    assert row.ratio is not None
    center = math.log(row.ratio)
    measured = between_sessions(a, b) if opts.between_run else None
    quantile = Z95  # of the interval; Student's t where the between-run sd was measured on few queries
    df_t = opts.between_df  # its degrees of freedom
    if measured is not None:
        # several sessions per side: the spread of the sessions' medians, measured, with
        # Student's t for its few degrees of freedom (docs/statistics.md)
        sb, df_t, levels = _with_levels(*measured, opts.common_level)
        source = f"{len(a.sessions) or 1}/{len(b.sessions) or 1} sessions{levels}"
        quantile = t95(df_t)
        half = quantile * sb
        lo, hi = min(lo, center - half), max(hi, center + half)
        row.between_run = BetweenRun(sb, source, half)
    elif opts.between_run and opts.between_run_sd is not None:
        # against the machine's shift: how far a typical query lies from it is measured —
        # the queries' scatter around it, which holds each run's own offset, the uneven
        # effect of the machine, the shift's error and a typical query's own noise; a
        # query noisier than typical adds its excess (docs/statistics.md)
        own = (hi - lo) / 2 / Z95
        sb = float(max(own, math.sqrt(opts.between_run_sd ** 2 + max(0.0, own ** 2 - opts.typical_within_sd ** 2))))
        if opts.between_df:
            quantile = t95(opts.between_df)
        lo, hi = center - quantile * sb, center + quantile * sb
        source = "scatter around the shift" if extra_half else "queries' scatter"
        extra_half = 0.0  # in the scatter already
        row.between_run = BetweenRun(sb, source, quantile * sb)
    elif opts.between_run:
        # separate runs: each run adds its own offset to every query's median, with a
        # spread that grows with the query's run-to-run spread (docs/statistics.md); the
        # spread as measured, before round factors were taken out (it was fitted so)
        sb = opts.between_run * math.hypot(a.run_spread(), b.run_spread())
        lo = center - math.hypot(center - lo, Z95 * sb)
        hi = center + math.hypot(hi - center, Z95 * sb)
        row.between_run = BetweenRun(sb, "factor", Z95 * sb)
    if extra_half:  # judged against a common shift: its own uncertainty adds
        lo, hi = center - math.hypot(center - lo, extra_half), center + math.hypot(hi - center, extra_half)
    row.p_value = float(sps.mannwhitneyu(a.times, b.times, alternative="two-sided").pvalue)
    if row.between_run is not None:
        # separate runs: the rank test sees each run's samples only, not the offset every
        # run adds to a query's median; the test must carry the same between-run variance
        # as the interval, or Holm controls nothing (simulated: 4–6% false alarms per
        # query on a noisy machine without this, docs/statistics.md)
        sd = (hi - lo) / 2 / quantile
        z = abs(center) / sd if sd > 0 else math.inf
        tail = 2 * float(sps.t.sf(z, df_t)) if quantile != Z95 and df_t else float(math.erfc(z / math.sqrt(2)))
        row.p_value = max(row.p_value, tail)
    lo, hi = lo - widen, hi + widen
    row.ci = (float(math.exp(lo)), float(math.exp(hi)))
    reasons = [f"A: {r}" for r in instability_reasons(_within_sessions(a), thr, opts.min_runs, a.ordered)]
    reasons += [f"B: {r}" for r in instability_reasons(_within_sessions(b), thr, opts.min_runs, b.ordered)]
    if (hi - lo) / 2 > math.log1p(thr):
        wa, wb = relative_ci_halfwidth(a.times), relative_ci_halfwidth(b.times)
        br = row.between_run
        extra = f", separate runs ±{math.expm1(br.half):.1%}" if br else ""
        extra += f" from {br.source}" if br and br.source != "factor" else ""
        extra += f", common shift ±{math.expm1(extra_half):.1%}" if extra_half else ""
        reasons.insert(0, f"interval wider than ±{thr:.0%} (median uncertainty A ±{wa:.1%}, B ±{wb:.1%} "
                          f"over {len(a.times)}/{len(b.times)} runs{extra})")
    elif reasons and not any("too few runs" in r for r in reasons) and -math.log1p(thr) < lo < hi < math.log1p(thr):
        # noisy runs, but the interval still rules out a threshold-sized change
        row.flags += reasons
        reasons = []
    row.reasons = reasons
    return lb


def _test_paired(row: QueryComparison, pairs: Pairs, opts: Options, rng: np.random.Generator) -> np.ndarray:
    """Side by side: the typical per-round ratio, its interval and the signed-rank test
    (stats/paired.py); returns bootstrap replicates of the typical log ratio."""
    thr = opts.threshold
    res = analyse(pairs, thr)
    row.paired = res
    row.ratio = math.exp(res.log_ratio)
    row.ci = (math.exp(res.log_lo), math.exp(res.log_hi))
    row.p_value = res.p_value
    reasons = []
    if not math.isfinite(res.log_hi - res.log_lo):
        reasons.append(f"too few rounds with both sides ({res.pairs}) for a 95% paired interval (6 needed)")
    elif (res.log_hi - res.log_lo) / 2 > math.log1p(thr):
        reasons.append(f"paired interval wider than ±{thr:.0%} (round-to-round spread ±{res.spread:.1%} "
                       f"over {res.pairs} rounds)")
    change, dp = res.drift
    if dp < 0.01 and abs(change) > thr:
        reasons.append(f"B/A drifting over the run ({change:+.0%} from first to last round)")
    row.reasons = reasons
    if res.order_effect is not None:
        row.flags.append(f"order effect {math.expm1(res.order_effect):+.1%} (A first vs B first), taken out")
    return bootstrap(pairs.d, rng)


def _pooled(a: list[float], b: list[float]) -> tuple[float, float, int] | None:
    """Two sides' values (log, one per session): their sd about each side's mean pooled
    over both, the standard error of the difference of the sides' means, and the degrees
    of freedom Σ(n − 1); None without any (a side with one value adds none)."""
    df = len(a) + len(b) - 2
    if df <= 0 or not a or not b:
        return None
    ss = sum(float(np.sum((np.asarray(v) - np.mean(v)) ** 2)) for v in (a, b))
    sd = math.sqrt(ss / df)
    return sd, sd * math.sqrt(1 / len(a) + 1 / len(b)), df


def sessions_measure_level(a: SideData, b: SideData) -> bool:
    """Whether the sessions measure how far each side's level moves between runs: two or
    more on *each* side (one side's sessions say nothing of the other's level; an A/A of one
    load file against two was called `faster`, see ``_level_unknown``)."""
    return len(a.sessions) >= 2 and len(b.sessions) >= 2


def between_sessions(a: SideData, b: SideData) -> tuple[float, int] | None:
    """The spread (sd of log medians) between sessions, pooled over both sides, as the
    standard error of the difference of the sides' means, with its degrees of freedom;
    None when neither side has two sessions."""
    meds = [[math.log(float(np.median(s))) for s in side.sessions if s] if len(side.sessions) > 1 else [0.0]
            for side in (a, b)]
    got = _pooled(*meds)
    if got is None:
        return None
    # never below what each session's median owes to its own runs: medians read off a
    # load file's histogram (buckets 1/128 apart) came out equal in two sessions, a
    # measured spread of 0 (seen in CI: between_run_sd 0)
    own = [_median_se(s) for side in (a, b) for s in (side.sessions or [side.times]) if len(s) > 1]
    sd = max(got[0], math.sqrt(float(np.mean(np.square(own)))) if own else 0.0)
    return sd * math.sqrt(1 / len(meds[0]) + 1 / len(meds[1])), got[2]


def _median_se(times: list[float]) -> float:
    """The standard error of a sample's median, relative: 1.2533 × its robust sd / √n."""
    return 1.2533 * 1.4826 * rel_mad(times) / math.sqrt(len(times))


def _with_levels(sb: float, df: int, level: tuple[float, int] | None) -> tuple[float, int, str]:
    """A query's spread between sessions with the shared level's added: the round factors
    took each session's machine level out of every query, and how far those levels moved
    is the uncertainty of the level all queries share (Welch–Satterthwaite for the degrees
    of freedom; docs/statistics.md). Returns the sd, its degrees of freedom and what it
    adds to the source."""
    if level is None or level[0] <= 0:
        return sb, df, ""
    se, df_l = level
    total = math.hypot(sb, se)
    return total, round(total ** 4 / (sb ** 4 / df + se ** 4 / df_l)), f" and their machine levels (±{se:.1%})"


def sessions_level(side_a: dict[str, SideData], side_b: dict[str, SideData]) -> dict[str, Any] | None:
    """How far the sessions' machine levels moved (stats/rounds.py took them out of every
    query), pooled over both sides: their sd (log) with Σ(sessions − 1) degrees of
    freedom, and ``se`` — what it leaves on the difference of the sides' mean levels,
    shared by every query. None unless both sides had round factors taken out and one has
    two sessions or more.

    Measured (eight ``run --sessions 3`` files of the built-in suite, embedded,
    2026-12-03): sessions 5 s apart stood 0.9–6.2% apart (sd) where each query's own
    session medians, those levels taken out, strayed 2.4–3.8%. Left out, A/A pairs were
    called a global change of the engine, and the simulator with 5% session levels
    flagged 2.8–4% of A/A queries (docs/measured.md)."""
    levels = [next((d.session_levels for d in side.values() if d.session_levels), []) for side in (side_a, side_b)]
    got = _pooled(*levels)
    if got is None:
        return None
    sd, se, df = got
    return {"sd": sd, "se": se, "df": df, "sessions": [len(v) for v in levels], "half": t95(df) * se}


def t95(df: float) -> float:
    """Student's t quantile of a 95% interval."""
    from scipy import stats as sps

    return float(sps.t.ppf(0.975, df))


def _within_sessions(s: SideData) -> list[float]:
    """The times with each session's offset taken out (scaled to the overall median), so
    a step between sessions — accounted for by between_sessions — is not read as drift."""
    if len(s.sessions) < 2:
        return s.times
    overall = float(np.median(s.times))
    return [t * overall / float(np.median(part)) for part in s.sessions for t in part]


def _verdicts(rows: list[QueryComparison], tested: list[int], opts: Options, widen: float,
              machine_step: float = 0.0) -> None:
    """False-alarm control across all tested queries, then each tested query's verdict."""
    pv = [float(rows[i].p_value or 1.0) for i in tested]
    if opts.correction == "holm":
        adj = holm(pv)
    elif opts.correction == "bh":
        adj = benjamini_hochberg(pv)
    else:
        adj = list(pv)
    for i, p_adj in zip(tested, adj, strict=True):
        row = rows[i]
        own = opts.for_query(row.name)  # a test's own threshold, where larger
        eff_thr = own.threshold + widen + machine_step
        if own.threshold != opts.threshold:
            row.threshold = own.threshold
        row.p_adjusted = p_adj
        ratio = row.ratio
        assert ratio is not None and row.ci is not None
        lo, hi = row.ci
        # too few runs decide nothing, however small the p-value (docs/statistics.md)
        significant = p_adj < opts.alpha and (lo > 1.0 or hi < 1.0) and not any("too few" in r for r in row.reasons)
        if significant and ratio >= math.exp(math.log1p(eff_thr)) and lo > 1.0:
            row.verdict = SLOWER
        elif significant and ratio <= math.exp(-math.log1p(eff_thr)) and hi < 1.0:
            row.verdict = FASTER
        elif row.reasons:
            row.verdict = UNSTABLE
            if not significant and (lo >= 1 + eff_thr or hi <= 1 / (1 + eff_thr)):
                # the interval is wide, but wholly past the threshold: what is missing is the
                # test's level, not a narrower interval (seen: +73% [+41%, +85%] over 8 paired
                # rounds of 10 queries, p adj. 0.078, said "noise ±14% > ±5%")
                row.reasons.insert(0, _not_shown(ratio, p_adj))
        elif machine_step and significant and abs(math.log(ratio)) >= math.log1p(own.threshold):
            row.verdict = UNSTABLE
            row.reasons.append(f"moved {ratio - 1:+.1%} against the rest while the machine itself moved all "
                               f"queries by {math.expm1(machine_step):.1%}: not told apart from the machine's "
                               f"uneven effect (needs beyond ±{eff_thr:.0%})")
        elif abs(math.log(ratio)) >= math.log1p(eff_thr):  # a change this large, not shown, is not "no change"
            row.verdict = UNSTABLE  # (seen: +31.0% [+26.9%, +34.6%] over 6 rounds, p adj. 0.31, said "no change")
            row.reasons.append(_not_shown(ratio, p_adj))
        elif not _equivalent(row, eff_thr):
            row.verdict = UNSTABLE
            eq = row.equivalence_ci or row.ci
            row.reasons.append(f"{EQUIVALENCE_LEVEL:.0%} interval reaches {beyond(_edge(*eq), eff_thr)}: a "
                               "threshold-sized change is not ruled out; more rounds decide it")
        else:
            row.verdict = NO_CHANGE
        row.reasoning = _why(row, significant, own, eff_thr)
        row.reason = short_reason(row, own.threshold, eff_thr)
        if widen and row.verdict in (SLOWER, FASTER, UNSTABLE):
            row.flags.append("machine itself changed between the runs: verdict qualified")


# a change past the threshold whose test did not pass Holm: the short reason and the
# findings line (compare/findings.py) find the query by these words
NOT_SHOWN = "not significant once corrected for the other queries"


def _not_shown(ratio: float, p_adj: float) -> str:
    return f"{ratio - 1:+.1%}, but {NOT_SHOWN} (p adj. {p_adj:.2g}): more rounds decide it"


LEVEL_UNKNOWN = "the machine's level between these files"


def _level_unknown(rows: list[QueryComparison], tested: list[int], measured: list[int]) -> None:
    """Separate files that hold nothing of the machine (no probes, no calibration query:
    load files, replays, runs without them) and too few queries for a shift all share to
    be seen (``stats/shift.py``): a query beyond the threshold cannot be told from the
    machine's level, unless two sessions or more on each side measured it (``measured``).
    Measured (2026-12-05, consecutive 4–5 s closed-loop load runs, -c 2, one 26.9
    server): with two queries 3 of 10 A/A queries flagged (+42% and +36% together in one
    pair); with six, none of 36. One load file against two was called `faster` −17%
    [−22%, −12%] in an A/A: the two sessions' medians fell in one histogram bucket, a
    between-session spread of 0 on one degree of freedom."""
    from chbench.stats.shift import MIN_QUERIES

    judged = [i for i in tested if finite_ratio(rows[i]) is not None]
    if len(judged) >= MIN_QUERIES:
        return
    for i in judged:
        r = rows[i]
        if r.verdict not in FLAGGED or i in measured:
            continue
        r.vs_one = Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
        r.verdict = UNSTABLE
        r.reasons.insert(0, f"{pct(r.ratio or 1.0)}, and nothing tells it from {LEVEL_UNKNOWN}: they hold no "
                            f"machine probes or calibration queries, and {len(judged)} quer"
                            f"{'y' if len(judged) == 1 else 'ies'} cannot show a shift all share "
                            f"({MIN_QUERIES} needed)")
        r.reasoning = "cannot tell a change from the machine: " + r.reasons[0]
        r.reason = "machine's level unknown"


def _busier_machine(rows: list[QueryComparison], tested: list[int], machine: dict[str, Any]) -> None:
    """Separate runs where the probes show one run's machine busier: a query that got
    slower in the busier run cannot be told from the machine, with or without a common
    shift taken out — a neighbour slows queries unevenly (measured: +1% to +41% on the
    built-in suite, with most near +2%, so three queries stood far beyond the shift).
    It is ``unstable`` (its verdict against 1 kept in ``vs_one`` unless the shift's
    analysis kept it already); a change the other way still stands (the machine worked
    against it), and so does one whose whole interval lies beyond what the machine can
    explain (``explains_up_to``, stats/machine.py: a 3× slowdown is not a neighbour's).
    Where the probes named no busier run but the reference task moved one way, not
    significantly (``maybe_busier``), the same rule, said as what it is."""
    maybe = not machine.get("busier")
    busier = machine["maybe_busier" if maybe else "busier"]
    what = (machine.get("maybe_why") if maybe else ", ".join(machine.get("differences") or [])) or "probes"
    was = "may have been busier" if maybe else "was busier"
    limit = float(machine.get("explains_up_to") or math.inf)
    for i in tested:
        r = rows[i]
        if (r.verdict == SLOWER and busier == "B") or (r.verdict == FASTER and busier == "A"):
            if r.beyond(limit, r.verdict == SLOWER):
                r.flags.append(f"the machine {was} during {busier} ({what}), which explains at most "
                               f"{limit - 1:+.0%}: this change is beyond it")
                continue
            if r.vs_one is None:
                r.vs_one = Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
            r.verdict, r.busier_machine = UNSTABLE, busier
            r.reasons.append(f"{r.ratio - 1 if r.ratio else 0:+.1%} while the machine {was} during {busier} "
                             f"({what}): not told apart from the machine")
            r.reasoning = "cannot tell a change from the machine: " + "; ".join(r.reasons)
            r.reason = f"{busier} may have run on a busier machine" if maybe else f"{busier} ran on a busier machine"


def _a_first(a: SideData, b: SideData) -> dict[tuple[int, int], bool] | None:
    """Per (session, round): whether A's run started before B's, from the recorded start
    times (None: not recorded for every run — the round's parity says, as two sides run)."""
    if len(a.starts) != len(a.keys) or len(b.starts) != len(b.keys) or None in a.starts or None in b.starts:
        return None
    sa, sb = dict(zip(a.keys, a.starts, strict=True)), dict(zip(b.keys, b.starts, strict=True))
    return {k: float(sa[k]) <= float(sb[k]) for k in sa if k in sb}  # type: ignore[arg-type]


EQUIVALENCE_LEVEL = 0.90  # two one-sided tests at 5% each (Schuirmann's TOST)


def _equivalent(row: QueryComparison, thr: float) -> bool:
    """``no change`` is an equivalence, not an absence of evidence: two one-sided tests
    at 5% each, i.e. the 90% interval within ±threshold (docs/statistics.md;
    stats/stopping.py makes it, for the adaptive runner too); kept in
    ``equivalence_ci``. The old rule (half-width and estimate within ±threshold) let
    "+4.4% [+0.9%, +9.1%]" be called "no change" (2026-12-03)."""
    assert row.ratio is not None and row.ci is not None
    c, lo, hi = math.log(row.ratio), math.log(row.ci[0]), math.log(row.ci[1])
    elo, ehi = equivalence_interval(c, lo, hi)
    row.equivalence_ci = (math.exp(elo), math.exp(ehi))
    return equivalent(c, lo, hi, thr)


def beyond(edge: float, thr: float) -> str:
    """An interval's end (a ratio) past the threshold on its side, both with the digits
    that show it: the band is symmetric in ratio, so it ends at +5% above and at 1/1.05,
    −4.8%, below — "reaches -4.9%, beyond ±5%" read as a contradiction (2026-12-07), as
    did "+5.0%, beyond ±5%" for +5.03%."""
    bound = 1 + thr if edge >= 1 else 1 / (1 + thr)
    for digits in (1, 2, 3):
        e, b = f"{edge - 1:+.{digits}%}", f"{bound - 1:+.{digits}%}"
        if e != b:
            break
    if edge >= 1:
        return f"{e}, beyond {b}"
    return f"{e}, beyond {b} (the band is symmetric in ratio: below, it ends at 1/{1 + thr:.4g})"


def _edge(lo: float, hi: float) -> float:
    """The end of an interval (of ratios) farthest from 1."""
    return hi if math.log(hi) >= -math.log(lo) else lo


def _why(row: QueryComparison, significant: bool, opts: Options, eff_thr: float) -> str:
    """The evidence for this verdict, in one phrase (the change and its interval are
    in the row already)."""
    p = f"p adj. {row.p_adjusted:.2g}"
    thr = opts.threshold
    how = "paired rounds, " if row.paired is not None else ""
    if row.verdict in FLAGGED:
        return f"{how}{p} < {opts.alpha}, interval excludes 0%, change beyond ±{eff_thr:.0%}"
    if row.verdict == UNSTABLE:
        return "cannot tell a ±{:.0%} change: {}".format(thr, "; ".join(row.reasons))
    if significant:
        return f"{how}{p}: a real change, its 90% interval within ±{eff_thr:.0%} (equivalence at 5%)"
    return f"{how}not significant ({p} ≥ {opts.alpha}), its 90% interval within ±{eff_thr:.0%} (equivalence at 5%)"


def short_reason(row: QueryComparison, thr: float, eff_thr: float) -> str:
    """The verdict's evidence in a few words, for tables a person scans; the full
    reasoning stays in ``reasoning`` (JSON, HTML, ``--verbose``)."""
    half = (math.log(row.ci[1]) - math.log(row.ci[0])) / 2 if row.ci and row.ci[0] > 0 else math.inf
    how = "paired" if row.paired is not None else "pooled" if row.between_run is None else \
        "vs the shift" if row.between_run.source == "scatter around the shift" else \
        "sessions' levels" if "machine levels" in row.between_run.source else "separate runs"
    if row.verdict in FLAGGED:
        return f"beyond ±{eff_thr:.0%}, p adj. {row.p_adjusted:.2g} ({how})"
    if row.verdict == UNSTABLE:
        text = " ".join(row.reasons).lower()
        if "too few" in text:
            return "too few runs"
        if "drifting" in text:
            return "drifting during the run"
        if "bimodal" in text:
            return "bimodal run times"
        if "uneven effect" in text:
            return "moved unlike the rest on a busier machine"
        if NOT_SHOWN in text:
            return f"beyond ±{thr:.0%} but not shown ({how})"  # the p adj. column says by how much
        if "interval reaches" in text and row.equivalence_ci:
            return f"{_edge(*row.equivalence_ci) - 1:+.1%} not ruled out ({how})"
        return f"noise ±{math.expm1(half):.0%} > ±{thr:.0%} ({how})"
    if row.p_adjusted is not None and row.p_adjusted < 0.05 and row.ci and (row.ci[0] > 1 or row.ci[1] < 1):
        return f"real but within ±{eff_thr:.0%} ({how})"
    eq = row.equivalence_ci or row.ci
    far = abs(_edge(*eq) - 1) if eq and eq[0] > 0 else math.inf
    return f"within ±{far:.1%} ({how})"  # the 90% interval: no change this large, at the 5% level


def _summary_verdict(row: QueryComparison, a: SideData, b: SideData, thr: float) -> None:
    """Verdict from percentile summaries only: a change must clear the other side's spread."""
    sa = a.summary or percentiles(a.times)
    sb = b.summary or percentiles(b.times)
    ratio = row.ratio
    assert ratio is not None
    if ratio >= 1 + thr and sb.get("min", 0) > sa.get("p90", math.inf):
        row.verdict = SLOWER
    elif ratio <= 1 - thr and sb.get("p90", math.inf) < sa.get("min", 0):
        row.verdict = FASTER
    elif (ratio >= 1 + thr or ratio <= 1 - thr):
        row.verdict = UNSTABLE
        row.reasons.append("medians differ, but the runs' ranges overlap and no raw samples allow a test")
    else:
        row.verdict = NO_CHANGE
    row.reason = "summary numbers only"


def _summary(
    rows: list[QueryComparison],
    boots: dict[int, np.ndarray],
    side_a: dict[str, SideData],
    side_b: dict[str, SideData],
    names: list[str],
    machine: dict[str, Any] | None,
    opts: Options,
) -> ComparisonSummary:
    ratios = [r for r in (finite_ratio(q) for q in rows) if r is not None]
    geo = Geomean(queries=len(ratios))
    if ratios:
        geo.ratio = float(math.exp(np.mean(np.log(ratios))))
        if boots and len(boots) == len(ratios):
            rep = np.mean(np.vstack(list(boots.values())), axis=0)
            lo, hi = np.percentile(rep, [2.5, 97.5])
            if opts.common_level is not None:  # every query shares the sessions' level
                se, df = opts.common_level
                centre, half = float(np.log(geo.ratio)), t95(df) * se
                lo, hi = centre - math.hypot(centre - lo, half), centre + math.hypot(hi - centre, half)
            geo.ci = (float(math.exp(lo)), float(math.exp(hi)))
    # over the queries with a median on both sides: one that failed or was never reached on
    # one side would add its time to the other side's total only
    both = [n for n in names if n in side_a and n in side_b
            and side_a[n].median() is not None and side_b[n].median() is not None]
    sum_a = sum(side_a[n].median() or 0.0 for n in both)
    sum_b = sum(side_b[n].median() or 0.0 for n in both)
    return ComparisonSummary(
        verdicts=count_verdicts(rows), geomean=geo,
        total_median_ms={"a": sum_a, "b": sum_b, "ratio": (sum_b / sum_a) if sum_a else None, "queries": len(both)},
        threshold=opts.threshold, alpha=opts.alpha, correction=opts.correction, machine=machine)


def machine_change(cal_a: list[float], cal_b: list[float], material: float = 0.02) -> dict[str, Any] | None:
    """How much the machine itself changed between two separate runs (the drift guard).

    Compares the fixed calibration query measured interleaved through both runs. The
    change is material when it is significant (Mann–Whitney p < 0.01) and beyond
    ``material``; then verdicts are widened by it."""
    if len(cal_a) < 3 or len(cal_b) < 3:
        return None
    change, lo, hi = ratio_interval(cal_a, cal_b, SEED + 1)
    from scipy import stats as sps

    p = float(sps.mannwhitneyu(cal_a, cal_b, alternative="two-sided").pvalue)
    is_material = p < 0.01 and abs(change - 1) > material
    return {
        "calibration_ratio": change,
        "ci": [float(math.exp(lo)), float(math.exp(hi))],
        "p_value": p,
        "log_change_bound": abs(math.log(change)) if is_material else 0.0,
        "material": bool(is_material),
        "calibration_material": bool(is_material),
        "runs": [len(cal_a), len(cal_b)],
    }
