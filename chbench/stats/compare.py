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

from chbench.stats.summary import instability_reasons, median_ci, percentiles, rel_mad, relative_ci_halfwidth

Z95 = 1.959963984540054
BOOTSTRAP = 2000
SEED = 20261130
TOO_SHORT_MS = 50.0


@dataclass
class SideData:
    """One side of one query, as loaded from a results file."""

    times: list[float] = field(default_factory=list)  # successful runs, in run order (ms)
    server_times: list[float] = field(default_factory=list)
    client_times: list[float] = field(default_factory=list)
    errors: int = 0
    error_sample: str | None = None
    summary: dict[str, float] | None = None  # foreign files without raw samples
    sql: str | None = None
    sessions: list[list[float]] = field(default_factory=list)  # times per session, when there are several
    skipped: str | None = None  # why this side did not run it (a performance test's missing table, …)

    @property
    def summary_only(self) -> bool:
        return not self.times and self.summary is not None

    def scaled(self, factor: float) -> SideData:
        """The same runs with every time multiplied by ``factor`` (a shift taken out)."""
        return SideData(times=[t * factor for t in self.times], server_times=[t * factor for t in self.server_times],
                        client_times=[t * factor for t in self.client_times], errors=self.errors,
                        error_sample=self.error_sample, summary=self.summary, sql=self.sql,
                        sessions=[[t * factor for t in s] for s in self.sessions], skipped=self.skipped)

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
    # per query, a larger threshold its author set (a performance test's max_ignored_relative_change)
    query_thresholds: dict[str, float] = field(default_factory=dict)

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
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i], reverse=True)
    adj = [1.0] * m
    running = 1.0
    for rank, i in enumerate(order):
        running = min(running, pvalues[i] * m / (m - rank))
        adj[i] = running
    return adj


def bootstrap_log_ratios(a: list[float], b: list[float], rng: np.random.Generator) -> np.ndarray:
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    ma = np.median(xa[rng.integers(0, len(xa), (BOOTSTRAP, len(xa)))], axis=1)
    mb = np.median(xb[rng.integers(0, len(xb), (BOOTSTRAP, len(xb)))], axis=1)
    return np.log(mb) - np.log(ma)


def ratio_interval(a: list[float], b: list[float], seed: int) -> tuple[float, float, float]:
    """median(b) / median(a) and the 95% bootstrap interval of its log (low, high)."""
    lo, hi = np.percentile(bootstrap_log_ratios(a, b, np.random.default_rng(seed)), [2.5, 97.5])
    return float(np.median(b) / np.median(a)), float(lo), float(hi)


def _side_json(s: SideData | None) -> dict[str, Any] | None:
    if s is None:
        return None
    out: dict[str, Any] = {"runs": len(s.times), "errors": s.errors}
    if s.times:
        out.update({k: round(v, 4) for k, v in percentiles(s.times).items()})
        lo, hi = median_ci(s.times)
        out["median_ci"] = [round(lo, 4), round(hi, 4)]
    elif s.summary:
        out.update({k: round(v, 4) for k, v in s.summary.items()})
        out["summary_only"] = True
    if s.server_times:
        out["server_median"] = round(float(np.median(s.server_times)), 4)
    if s.error_sample:
        out["error_sample"] = s.error_sample
    return out


def compare_queries(
    names: list[str],
    side_a: dict[str, SideData],
    side_b: dict[str, SideData],
    opts: Options,
    machine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole comparison, as the JSON document ``compare --format json`` prints.

    Every query is judged against 1 (no change). When all queries moved together
    (``stats/shift.py``), each is judged against that common shift too; a shift the
    machine explains (its probes, ``stats/machine.py``) is taken out of every verdict."""
    from chbench.stats.shift import apply_shift, common_shift

    # the legacy drift guard: intervals widened by the calibration query's change, where
    # no common shift can be taken out instead
    widen = float(machine["log_change_bound"]) if machine and machine.get("log_change_bound") else 0.0
    rows, boots, tested = _judge(names, side_a, side_b, opts, np.random.default_rng(SEED), 0.0)
    shift = common_shift(rows, boots, tested, opts.threshold, machine, np.random.default_rng(SEED + 2))
    if shift is not None:
        scaled = {n: d.scaled(1.0 / shift["ratio"]) for n, d in side_b.items()}
        half = (math.log(shift["ci"][1]) - math.log(shift["ci"][0])) / 2
        # against a shift the machine explains, a query must move beyond the threshold
        # *plus* the machine's own shift to be called slower/faster: a busier machine does
        # not slow every query alike (measured: a neighbour at 30% of a core moved the
        # built-in queries by +2% to +23% while most moved +9%; bench/drift_bars.py)
        machine_step = abs(math.log(shift["ratio"])) if shift["explained_by_machine"] else 0.0
        shifted = replace(opts, between_run_sd=shift["scatter_sd"], typical_within_sd=shift["within_sd"]) \
            if shift["explained_by_machine"] else opts
        against, _, _ = _judge(names, side_a, scaled, shifted, np.random.default_rng(SEED), 0.0, half, machine_step)
        apply_shift(rows, against, tested, shift)
    elif widen:
        rows, boots, tested = _judge(names, side_a, side_b, opts, np.random.default_rng(SEED), widen)
    summary = _summary(rows, boots, side_a, side_b, names, machine, opts)
    summary["shift"] = shift
    return {"queries": rows, "summary": summary}


def _judge(names: list[str], side_a: dict[str, SideData], side_b: dict[str, SideData], opts: Options,
           rng: np.random.Generator, widen: float, extra_half: float = 0.0, machine_step: float = 0.0,
           ) -> tuple[list[dict[str, Any]], dict[int, np.ndarray], list[int]]:
    """Each query's row, test and verdict; the bootstraps and which rows were tested."""
    rows: list[dict[str, Any]] = []
    boots: dict[int, np.ndarray] = {}
    tested: list[int] = []
    for name in names:
        a, b = side_a.get(name), side_b.get(name)
        row = _new_row(name, a, b)
        rows.append(row)
        if a is None or b is None or row["verdict"] in ("failed", "fails on B only", "skipped"):
            continue
        _flags(row, a, b)
        if a.summary_only or b.summary_only:
            row["flags"].append("summary numbers only: weaker verdict")
            _summary_verdict(row, a, b, opts.for_query(name).threshold)
            continue
        boots[len(rows) - 1] = _test(row, a, b, opts.for_query(name), rng, widen, extra_half)
        tested.append(len(rows) - 1)
    _verdicts(rows, tested, opts, widen, machine_step)
    return rows, boots, tested


def _new_row(name: str, a: SideData | None, b: SideData | None) -> dict[str, Any]:
    """A query's row, with the verdicts that need no test: only on one side, failed."""
    row: dict[str, Any] = {"name": name, "verdict": "no change", "ratio": None, "ci": None, "p_value": None,
                           "a": _side_json(a), "b": _side_json(b), "flags": [], "reasons": []}
    if a is None or b is None:
        row["verdict"] = "only in A" if b is None else "only in B"
        return row
    if a.skipped or b.skipped:
        row["verdict"] = "skipped"
        row["reasons"] = [a.skipped] if a.skipped == b.skipped else \
            [f"{label}: {s.skipped}" for label, s in (("A", a), ("B", b)) if s.skipped]
        return row
    a_failed = not a.times and not a.summary_only
    b_failed = not b.times and not b.summary_only
    if a_failed or b_failed:
        row["verdict"] = "failed"
        if a_failed and not b_failed:
            row["flags"].append("fails in A only")
        elif b_failed and not a_failed:
            row["verdict"] = "fails on B only"
            row["flags"].append("fails in B only (backward-incompatible?)")
        else:
            row["flags"].append("fails on both sides")
    return row


def _flags(row: dict[str, Any], a: SideData, b: SideData) -> None:
    """The ratio of medians, and flags as ClickHouse's performance report has them."""
    if a.errors and not b.errors:
        row["flags"].append(f"errors in A only ({a.errors})")
    elif b.errors and not a.errors:
        row["flags"].append(f"errors in B only ({b.errors})")
    ma, mb = a.median(), b.median()
    assert ma is not None and mb is not None
    row["ratio"] = mb / ma if ma > 0 else math.inf
    if min(ma, mb) < TOO_SHORT_MS:
        row["flags"].append(f"too short to measure well (< {TOO_SHORT_MS:.0f} ms)")
    for label, s in (("A", a), ("B", b)):
        if s.server_times and s.client_times:
            cm, sm = float(np.median(s.client_times)), float(np.median(s.server_times))
            if cm - sm > max(5.0, 0.5 * sm):
                row["flags"].append(f"slow on client in {label} (client {cm:.0f} ms vs server {sm:.0f} ms)")


def _test(row: dict[str, Any], a: SideData, b: SideData, opts: Options, rng: np.random.Generator,
          widen: float, extra_half: float = 0.0) -> np.ndarray:
    """Interval (bootstrap, widened for separate runs and machine drift), p-value and the
    reasons the runs cannot tell a threshold-sized change; returns the bootstrap."""
    from scipy import stats as sps

    thr = opts.threshold
    lb = bootstrap_log_ratios(a.times, b.times, rng)
    lo, hi = np.percentile(lb, [2.5, 97.5])
    center = math.log(row["ratio"])
    measured = between_sessions(a, b) if opts.between_run else None
    if measured is not None:
        # several sessions per side: the spread of the sessions' medians, measured, with
        # Student's t for its few degrees of freedom (docs/statistics.md)
        sb, df = measured
        half = float(sps.t.ppf(0.975, df)) * sb
        lo, hi = min(lo, center - half), max(hi, center + half)
        row["between_run_sd"], row["between_run_from"] = sb, f"{len(a.sessions) or 1}/{len(b.sessions) or 1} sessions"
        row["between_run_half"] = half
    elif opts.between_run and opts.between_run_sd is not None:
        # against the machine's shift: how far a typical query lies from it is measured —
        # the queries' scatter around it, which holds each run's own offset, the uneven
        # effect of the machine, the shift's error and a typical query's own noise; a
        # query noisier than typical adds its excess (docs/statistics.md)
        own = (hi - lo) / 2 / Z95
        sb = max(own, math.sqrt(opts.between_run_sd ** 2 + max(0.0, own ** 2 - opts.typical_within_sd ** 2)))
        lo, hi = center - Z95 * sb, center + Z95 * sb
        extra_half = 0.0  # in the scatter already
        row["between_run_sd"], row["between_run_from"] = sb, "scatter around the shift"
        row["between_run_half"] = Z95 * sb
    elif opts.between_run:
        # separate runs: each run adds its own offset to every query's median, with a
        # spread that grows with the query's run-to-run spread (docs/statistics.md)
        sb = opts.between_run * math.hypot(rel_mad(a.times), rel_mad(b.times))
        lo = center - math.hypot(center - lo, Z95 * sb)
        hi = center + math.hypot(hi - center, Z95 * sb)
        row["between_run_sd"], row["between_run_from"] = sb, "factor"
        row["between_run_half"] = Z95 * sb
    if extra_half:  # judged against a common shift: its own uncertainty adds
        lo, hi = center - math.hypot(center - lo, extra_half), center + math.hypot(hi - center, extra_half)
    row["p_value"] = float(sps.mannwhitneyu(a.times, b.times, alternative="two-sided").pvalue)
    lo, hi = lo - widen, hi + widen
    row["ci"] = [float(math.exp(lo)), float(math.exp(hi))]
    reasons = [f"A: {r}" for r in instability_reasons(_within_sessions(a), thr, opts.min_runs)]
    reasons += [f"B: {r}" for r in instability_reasons(_within_sessions(b), thr, opts.min_runs)]
    if (hi - lo) / 2 > math.log1p(thr):
        wa, wb = relative_ci_halfwidth(a.times), relative_ci_halfwidth(b.times)
        extra = f", separate runs ±{math.expm1(row['between_run_half']):.1%}" if "between_run_half" in row else ""
        extra += f" from {row['between_run_from']}" if row.get("between_run_from", "factor") != "factor" \
            else ""
        extra += f", common shift ±{math.expm1(extra_half):.1%}" if extra_half else ""
        reasons.insert(0, f"interval wider than ±{thr:.0%} (median uncertainty A ±{wa:.1%}, B ±{wb:.1%} "
                          f"over {len(a.times)}/{len(b.times)} runs{extra})")
    elif reasons and not any("too few runs" in r for r in reasons) and -math.log1p(thr) < lo < hi < math.log1p(thr):
        # noisy runs, but the interval still rules out a threshold-sized change
        row["flags"] += reasons
        reasons = []
    row["reasons"] = reasons
    return lb


def between_sessions(a: SideData, b: SideData) -> tuple[float, int] | None:
    """The spread (sd of log medians) between sessions, pooled over both sides, as the
    standard error of the difference of the sides' means, with its degrees of freedom;
    None when neither side has two sessions."""
    ss, df, n = 0.0, 0, []
    for side in (a, b):
        meds = np.log([float(np.median(s)) for s in side.sessions if s]) if len(side.sessions) > 1 else None
        n.append(len(meds) if meds is not None else 1)
        if meds is not None:
            ss += float(np.sum((meds - meds.mean()) ** 2))
            df += len(meds) - 1
    if df == 0:
        return None
    return math.sqrt(ss / df) * math.sqrt(1 / n[0] + 1 / n[1]), df


def _within_sessions(s: SideData) -> list[float]:
    """The times with each session's offset taken out (scaled to the overall median), so
    a step between sessions — accounted for by between_sessions — is not read as drift."""
    if len(s.sessions) < 2:
        return s.times
    overall = float(np.median(s.times))
    return [t * overall / float(np.median(part)) for part in s.sessions for t in part]


def _verdicts(rows: list[dict[str, Any]], tested: list[int], opts: Options, widen: float,
              machine_step: float = 0.0) -> None:
    """False-alarm control across all tested queries, then each tested query's verdict."""
    pv = [rows[i]["p_value"] for i in tested]
    if opts.correction == "holm":
        adj = holm(pv)
    elif opts.correction == "bh":
        adj = benjamini_hochberg(pv)
    else:
        adj = list(pv)
    for i, p_adj in zip(tested, adj, strict=True):
        row = rows[i]
        own = opts.for_query(row["name"])  # a test's own threshold, where larger
        eff_thr = own.threshold + widen + machine_step
        if own.threshold != opts.threshold:
            row["threshold"] = own.threshold
        row["p_adjusted"] = p_adj
        ratio = row["ratio"]
        lo, hi = row["ci"]
        significant = p_adj < opts.alpha and (lo > 1.0 or hi < 1.0)
        if significant and ratio >= math.exp(math.log1p(eff_thr)) and lo > 1.0:
            row["verdict"] = "slower"
        elif significant and ratio <= math.exp(-math.log1p(eff_thr)) and hi < 1.0:
            row["verdict"] = "faster"
        elif row["reasons"]:
            row["verdict"] = "unstable"
        elif machine_step and significant and abs(math.log(ratio)) >= math.log1p(own.threshold):
            row["verdict"] = "unstable"
            row["reasons"].append(f"moved {ratio - 1:+.1%} against the rest while the machine itself moved all "
                                  f"queries by {math.expm1(machine_step):.1%}: not told apart from the machine's "
                                  f"uneven effect (needs beyond ±{eff_thr:.0%})")
        else:
            row["verdict"] = "no change"
        row["why"] = _why(row, significant, own, eff_thr)
        if widen and row["verdict"] in ("slower", "faster", "unstable"):
            row["flags"].append("machine itself changed between the runs: verdict qualified")


def _why(row: dict[str, Any], significant: bool, opts: Options, eff_thr: float) -> str:
    """The evidence for this verdict, in one phrase (the change and its interval are
    in the row already)."""
    p = f"p adj. {row['p_adjusted']:.2g}"
    thr = opts.threshold
    verdict = row["verdict"]
    if verdict in ("slower", "faster"):
        return f"{p} < {opts.alpha}, interval excludes 0%, change beyond ±{eff_thr:.0%}"
    if verdict == "unstable":
        return "cannot tell a ±{:.0%} change: {}".format(thr, "; ".join(row["reasons"]))
    if significant:
        return f"{p}: a real change, within ±{eff_thr:.0%}"
    return f"not significant ({p} ≥ {opts.alpha}), interval narrow enough to see ±{thr:.0%}"


def _summary_verdict(row: dict[str, Any], a: SideData, b: SideData, thr: float) -> None:
    """Verdict from percentile summaries only: a change must clear the other side's spread."""
    sa = a.summary or percentiles(a.times)
    sb = b.summary or percentiles(b.times)
    ratio = row["ratio"]
    if ratio >= 1 + thr and sb.get("min", 0) > sa.get("p90", math.inf):
        row["verdict"] = "slower"
    elif ratio <= 1 - thr and sb.get("p90", math.inf) < sa.get("min", 0):
        row["verdict"] = "faster"
    elif (ratio >= 1 + thr or ratio <= 1 - thr):
        row["verdict"] = "unstable"
        row["reasons"].append("medians differ, but the runs' ranges overlap and no raw samples allow a test")
    else:
        row["verdict"] = "no change"


def _summary(
    rows: list[dict[str, Any]],
    boots: dict[int, np.ndarray],
    side_a: dict[str, SideData],
    side_b: dict[str, SideData],
    names: list[str],
    machine: dict[str, Any] | None,
    opts: Options,
) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    ratios = [r["ratio"] for r in rows if r["ratio"] and math.isfinite(r["ratio"]) and r["ratio"] > 0]
    geo: dict[str, Any] = {"ratio": None, "ci": None, "queries": len(ratios)}
    if ratios:
        geo["ratio"] = float(math.exp(np.mean(np.log(ratios))))
        if boots and len(boots) == len(ratios):
            rep = np.mean(np.vstack(list(boots.values())), axis=0)
            lo, hi = np.percentile(rep, [2.5, 97.5])
            geo["ci"] = [float(math.exp(lo)), float(math.exp(hi))]
    both = [n for n in names if n in side_a and n in side_b]
    sum_a = sum((side_a[n].median() or 0.0) for n in both)
    sum_b = sum((side_b[n].median() or 0.0) for n in both)
    return {
        "verdicts": counts,
        "geomean": geo,
        "total_median_ms": {"a": sum_a, "b": sum_b, "ratio": (sum_b / sum_a) if sum_a else None},
        "threshold": opts.threshold,
        "alpha": opts.alpha,
        "correction": opts.correction,
        "machine": machine,
    }


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
