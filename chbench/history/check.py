"""``history check``: every series' changes, each confirmed on the raw samples, and which
of them are new since the last check (docs/history.md).

A candidate step (``detect.py``) is confirmed the way ``chbench compare`` judges two sets
of separate runs (docs/statistics.md): the runs before it (up to ``CONFIRM_RUNS``, its own
segment, spikes left out) as side A, those after as side B, every sample with its run's
machine factor taken out, each run a session — so the interval carries the spread
between runs, measured, with Student's t — and the Mann–Whitney test. It stands when
that interval excludes 1 on the candidate's side, the test's p < alpha and the ratio is
beyond the threshold. A creep is confirmed the same way, its first third against its
last third.

A change is *new* unless an earlier check reported one of the same series and kind
within ``SAME_CHANGE`` runs of it (a change's place can move by a run as runs are added).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chbench.history.detect import CREEP_WINDOW, Z_DETECT, Detection, detect
from chbench.history.record import HistoryRun, iso
from chbench.history.series import SUITE, Series, SeriesTable, build
from chbench.history.store import Reported
from chbench.results.run import configuration_diff
from chbench.stats.compare import BETWEEN_RUN_FACTOR, Options, SideData, compare_queries

CONFIRM_RUNS = 20
SAME_CHANGE = 3
CUT_Z = 2.0  # a step this many times the detection threshold moves its query's level in the factors
REGRESSION, IMPROVEMENT, TREND = "regression", "improvement", "trend"
CONFIGURATION_CHANGED = "the configuration changed here"  # a change's note: "…: run …: max_threads unset → 1"


@dataclass
class SeriesChange:
    query: str
    key: str
    index: int  # in the query's series: the first run at the new level (a trend: its first run)
    run_id: str
    started_at: float
    ratio: float
    ci: tuple[float, float]
    kind: str
    new: bool = True
    p_value: float | None = None
    direction: str = ""  # slower | faster
    rate_per_week: float | None = None  # a trend's
    end_index: int | None = None  # a trend's last run (its place in the series) + 1
    before: tuple[str, str] | None = None  # the runs compared: the last before and the first after
    runs: tuple[int, int] = (0, 0)  # how many runs each side of the confirmation had
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "index": self.index, "run_id": self.run_id, "ratio": _r(self.ratio),
                               "ci": [_r(self.ci[0]), _r(self.ci[1])], "kind": self.kind, "new": self.new,
                               "direction": self.direction, "started_at": iso(self.started_at), "key": self.key,
                               "p_value": None if self.p_value is None else float(f"{self.p_value:.3g}"),
                               "runs_compared": list(self.runs)}
        if self.rate_per_week is not None:
            out["rate_per_week"] = _r(self.rate_per_week)
        if self.before is not None:
            out["compared"] = {"last_before": self.before[0], "first_after": self.before[1]}
        if self.notes:
            out["notes"] = self.notes
        return out

    def reported(self) -> Reported:
        return Reported(self.query, self.key, self.run_id, self.kind, self.ratio, time.time())


@dataclass
class SeriesSummary:
    query: str
    key: str
    runs: int
    noise: float  # run-to-run sd (relative), the machine's factor taken out
    spikes: list[int]
    pending: bool
    too_short: bool
    unconfirmed: int  # candidates the raw samples did not confirm
    last_ms: float | None
    notes: list[str] = field(default_factory=list)
    sensitivity: float = 1.0  # how strongly it follows the machine's factor (1: like the suite)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "key": self.key, "runs": self.runs, "noise": _r(self.noise),
                "sensitivity": _r(self.sensitivity),
                "spikes": self.spikes, "pending": self.pending, "too_short": self.too_short,
                "unconfirmed": self.unconfirmed, "last_ms": None if self.last_ms is None else round(self.last_ms, 3),
                **({"notes": self.notes} if self.notes else {})}


@dataclass
class CheckResult:
    changes: list[SeriesChange]
    series: list[SeriesSummary]
    runs: int
    notes: list[str]

    @property
    def new_regressions(self) -> list[SeriesChange]:
        return [c for c in self.changes if c.new and c.kind == REGRESSION]

    def to_json(self) -> dict[str, Any]:
        return {"changes": [c.to_json() for c in self.changes], "runs": self.runs,
                "series": [s.to_json() for s in self.series], "notes": self.notes}


@dataclass
class CheckOptions:
    threshold: float = 0.02  # the least change reported
    alpha: float = 0.05  # of the confirmation
    z_detect: float = Z_DETECT
    since: float | None = None  # report changes from runs started at or after this


def _r(v: float) -> float:
    return float(f"{v:.4g}") if math.isfinite(v) else v


def check(runs: list[HistoryRun], reported: list[Reported], opts: CheckOptions | None = None) -> CheckResult:
    """Every series' confirmed changes, oldest first, each marked new or not."""
    opts = opts or CheckOptions()
    table = build(runs)
    if table.factored:  # the factors again, each query's level following its own large steps
        table.refine([_cuts(s, opts) for s in table.series])
    notes = [f"new baseline from run {runs[i].run_id} ({what}): levels before and after are not compared"
             for i, what in table.baselines]
    if not table.factored and runs:
        notes.append("fewer than 4 queries per run: the machine's factor of each run is not taken out")
    suite: list[SeriesChange] = []
    machine: list[SeriesChange] = []  # the steps every query made with the machine's reference
    if table.factored:  # the suite's own steps (not the machine's) stay in its queries' series
        steps = _series_changes(table.suite, opts, suite=True)[0]
        suite = _unexplained(steps, table, notes, machine)
        table.keep_steps([(c.index, math.log(c.ratio)) for c in suite if c.kind != TREND])
        if any(c not in suite and c.kind != TREND for c in steps):  # the machine stepped: who followed it how far
            table.fit_sensitivities()
    changes: list[SeriesChange] = []
    summaries: list[SeriesSummary] = []
    for s in table.series:
        found, summary = _series_changes(s, opts)
        changes += found
        summaries.append(summary)
    changes = _harder_hit(changes, machine, table, notes) + suite
    _configured(changes, table, runs)
    _mark_new(changes, table, reported)
    if opts.since is not None:
        changes = [c for c in changes if c.started_at >= opts.since]
    changes.sort(key=lambda c: (c.started_at, c.query))
    return CheckResult(changes, summaries, len(runs), notes)


def _configured(changes: list[SeriesChange], table: SeriesTable, runs: list[HistoryRun]) -> None:
    """A note on each change where the user changed the configuration (version, settings)."""
    cols = _columns(table)
    for c in changes:
        col = cols[(c.query, c.key)][c.index]
        config = _configuration_change(runs, col)
        if config:
            c.notes.append(f"{CONFIGURATION_CHANGED}: {config}")


def _columns(table: SeriesTable) -> dict[tuple[str, str], list[int]]:
    """Per series (query, key), the run column of each of its points: a change's index is
    its place in its own series, which skips the runs that query did not succeed in."""
    return {(s.name, s.key): [p.col for p in s.points] for s in [*table.series, table.suite]}


def _harder_hit(changes: list[SeriesChange], machine: list[SeriesChange], table: SeriesTable,
                notes: list[str]) -> list[SeriesChange]:
    """A query's step within SAME_CHANGE runs of a step every query made that the machine's
    reference made too (the machine's), the same way, and not shown beyond it: the
    machine may have hit that query harder — a note, not a change. Seen (2026-12-07,
    issue 27's real bar on a 26.9 server): every query +4.9% from run 25 with the
    calibration query +3.0%, and `url_like`, a string scan, "regressed" +3.9% [+1.7%,
    +6.2%] from run 27 on top, nothing about it changed. A busier machine does not slow every
    query alike (compare's rule against a machine's shift: stats/compare.py)."""
    if not machine:
        return changes
    cols = _columns(table)
    steps = [(cols[(m.query, m.key)][m.index], math.log(m.ratio), m.run_id) for m in machine]
    out = []
    for c in changes:
        col, size = cols[(c.query, c.key)][c.index], math.log(c.ratio)
        near = math.log(c.ci[0] if size > 0 else c.ci[1])  # the interval's end nearest to no change
        hit = None if c.kind == TREND else next(
            (m for m in steps if abs(col - m[0]) <= SAME_CHANGE and m[1] * size > 0 and abs(near) < abs(m[1])), None)
        if hit is None:
            out.append(c)
            continue
        notes.append(f"{c.query}: {c.ratio - 1:+.1%} [{c.ci[0] - 1:+.1%}, {c.ci[1] - 1:+.1%}] from run {c.run_id}, "
                     f"{abs(col - hit[0])} run(s) from the machine's step ({math.expm1(hit[1]):+.1%} from run "
                     f"{hit[2]}) and not shown beyond it: the machine may have hit this query harder, not reported")
    return out


def _cuts(s: Series, opts: CheckOptions) -> list[int]:
    """Where a series' level surely changes: its machine baselines and its steps beyond
    ``CUT_Z`` × the detection threshold (series.SeriesTable.refine)."""
    out: list[int] = []
    for start, end in s.segments():
        if start:
            out.append(start)
        det = detect(np.array([p.y for p in s.points[start:end]]), None, opts.z_detect * CUT_Z, creep=False)
        out += [start + st.index for st in det.steps]
    return sorted(out)


def _series_changes(s: Series, opts: CheckOptions, suite: bool = False) -> tuple[list[SeriesChange], SeriesSummary]:
    found: list[SeriesChange] = []
    spikes: list[int] = []
    pending, too_short, unconfirmed, sigma = False, True, 0, 0.0
    for start, end in s.segments():
        pts = s.points[start:end]
        y = np.array([p.y for p in pts])
        days = np.array([p.run.started_at / 86400.0 for p in pts])
        det = detect(y, days, opts.z_detect, opts.threshold)
        sigma = det.sigma
        too_short = too_short and det.too_short
        spikes += [start + i for i in det.spikes]
        pending = det.pending is not None and end == len(s.points)
        for ch in _confirmed(s, start, det, opts, suite):
            if ch is None:
                unconfirmed += 1
            else:
                found.append(ch)
    last = s.points[-1].query.median_ms if s.points and s.points[-1].query else None
    notes = [f"{s.failed_runs} runs without a successful sample: not in the series"] if s.failed_runs else []
    notes += _gaps(s)
    return found, SeriesSummary(s.name, s.key, len(s.points), math.expm1(sigma), spikes, pending, too_short,
                                unconfirmed, last, notes, s.sensitivity)


def _gaps(s: Series) -> list[str]:
    """Where a series paused for far longer than usual (a change across a gap is still a
    change: its place is known only to within the gap)."""
    t = np.array([p.run.started_at for p in s.points])
    if len(t) < 3:
        return []
    dt = np.diff(t)
    usual = float(np.median(dt))
    return [f"a gap of {dt[i] / 86400:.1f} days before run {i + 1} (usually {usual / 3600:.1f} h apart)"
            for i in np.flatnonzero(dt > max(7 * usual, 2 * 86400))]


def _confirmed(s: Series, base: int, det: Detection, opts: CheckOptions, suite: bool) -> list[SeriesChange | None]:
    """Each candidate of one segment, confirmed (a SeriesChange) or not (None)."""
    out: list[SeriesChange | None] = []
    skip = set(det.spikes) | ({det.pending} if det.pending is not None else set())
    steps = det.steps
    if det.trend is not None:  # the steps the creep explains are part of it
        steps = [st for st in steps if st.index < det.trend.start]
    for st in steps:
        before = [i for i in range(max(st.left, st.index - CONFIRM_RUNS), st.index) if i not in skip]
        after = [i for i in range(st.index, min(st.right, st.index + CONFIRM_RUNS)) if i not in skip]
        ch = _compare(s, base, before, after, st.index, opts, suite)
        if ch is not None and np.sign(math.log(ch.ratio)) != np.sign(st.log_size):
            ch = None
        out.append(ch)
    tr = det.trend
    if tr is not None:
        idx = [i for i in range(tr.start, tr.end) if i not in skip]
        third = max(2, len(idx) // 3)
        ch = _compare(s, base, idx[:third], idx[-third:], tr.start, opts, suite)
        if ch is not None and np.sign(math.log(ch.ratio)) == np.sign(tr.log_per_day):
            ch.kind, ch.rate_per_week, ch.end_index = TREND, tr.per_week, base + tr.end
            span = s.points[base + tr.end - 1].run.started_at - s.points[base + tr.start].run.started_at
            ch.notes.append(f"{tr.per_week:+.2%} per week over {tr.end - tr.start} runs ({span / 86400:.1f} days); "
                            f"99.9% interval {math.expm1(7 * tr.lo_per_day):+.2%} … "
                            f"{math.expm1(7 * tr.hi_per_day):+.2%} per week")
            out.append(ch)
        else:
            out.append(None)
    return out


def _samples(s: Series, base: int, idx: list[int]) -> SideData:
    """The runs' raw samples as one side, each run a session, its machine factor taken out."""
    d = SideData()
    for i in idx:
        p = s.points[base + i]
        if p.query is None:  # the suite's series: the factor is the sample
            times = [math.exp(p.log_median)]
        else:
            scale = math.exp(-p.factor)
            times = [t * scale for t in p.query.client_ms]
        d.sessions.append(times)
        d.times += times
        d.client_times += times
        d.keys += [(len(d.sessions) - 1, r) for r in range(len(times))]
    return d


def _compare(s: Series, base: int, before: list[int], after: list[int], index: int, opts: CheckOptions,
             suite: bool) -> SeriesChange | None:
    if len(before) < 2 or len(after) < 2:
        return None
    a, b = _samples(s, base, before), _samples(s, base, after)
    if suite:  # one number per run: a t interval over the runs
        ratio, lo, hi, p = _t_interval(np.log(a.times), np.log(b.times))
    else:
        res = compare_queries([s.name], {s.name: a}, {s.name: b},
                              Options(threshold=opts.threshold, alpha=opts.alpha, between_run=BETWEEN_RUN_FACTOR,
                                      min_runs=3))
        row = res.queries[0]
        if row.ratio is None or row.ci is None:
            return None
        ratio, (lo, hi), p = float(row.ratio), row.ci, float(row.p_value if row.p_value is not None else 1.0)
    significant = (lo > 1 or hi < 1) and p < opts.alpha and abs(math.log(ratio)) >= math.log1p(opts.threshold)
    if not significant:
        return None
    first = s.points[base + index]
    return SeriesChange(query=s.name, key=s.key, index=base + index, run_id=first.run.run_id,
                  started_at=first.run.started_at, ratio=ratio, ci=(float(lo), float(hi)),
                  kind=REGRESSION if ratio > 1 else IMPROVEMENT, p_value=p,
                  direction="slower" if ratio > 1 else "faster",
                  before=(s.points[base + before[-1]].run.run_id, first.run.run_id), runs=(len(before), len(after)))


def _t_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    from scipy import stats as sps

    d = float(b.mean() - a.mean())
    df = len(a) + len(b) - 2
    sd = math.sqrt((float(np.sum((a - a.mean()) ** 2)) + float(np.sum((b - b.mean()) ** 2))) / max(1, df))
    se = max(sd, 1e-9) * math.sqrt(1 / len(a) + 1 / len(b))
    half = float(sps.t.ppf(0.975, df)) * se
    p = float(2 * sps.t.sf(abs(d) / se, df))
    return math.exp(d), math.exp(d - half), math.exp(d + half), p


def _unexplained(suite: list[SeriesChange], table: SeriesTable, notes: list[str],
                 machine: list[SeriesChange]) -> list[SeriesChange]:
    """Steps of the whole suite the machine's own reference did not share: the suite's.
    The rest were the machine: a note each (and into ``machine``). With no reference that ran alike either side,
    a step where the user changed the configuration (the server's version, the run's
    settings) is the suite's; any other is not reported."""
    out = []
    runs = [p.run for p in table.suite.points]
    for ch in suite:
        i, (n_before, n_after) = ch.index, ch.runs  # the runs its confirmation compared
        witness = _witness(runs[max(0, i - n_before):i], runs[i:i + n_after])
        config = _configuration_change(runs, i)
        also = f" (the configuration changed there too: {config})" if config else ""
        if witness is None and config is None:
            notes.append(f"every query moved {ch.ratio - 1:+.1%} from run {ch.run_id}; the runs carry no reference "
                         "of the machine's speed (calibration query) to tell the machine from the suite: not reported")
            continue
        if witness is None:
            ch.notes.append("every query moved together where the configuration changed; no reference of the "
                            "machine's speed ran alike either side")
            out.append(ch)
            continue
        moved, by = witness
        step = math.log(ch.ratio)
        if math.log(moved) * step > 0 and abs(math.log(moved)) >= abs(step) / 2:
            notes.append(f"every query moved {ch.ratio - 1:+.1%} from run {ch.run_id} and so did the machine's "
                         f"reference ({by}, {moved - 1:+.1%}): the machine, not reported{also}")
            if ch.kind != TREND:
                machine.append(ch)
            continue
        ch.notes.append(f"every query moved together; the machine's reference ({by}) moved {moved - 1:+.1%}")
        out.append(ch)
    return out


def _witness(before: list[HistoryRun], after: list[HistoryRun]) -> tuple[float, str] | None:
    """How far the machine's own reference moved between the runs before a step and those
    after it (the runs its confirmation compared, within its segment): the calibration
    query where it ran alike either side (the same server version and settings: a new
    version or a setting moves it with the suite), else the reference task (a process of
    chbench's own, timing the machine alone; engines on this host)."""
    if not before or not after:
        return None
    ctx = _calibration_context(before[-1])
    if _calibration_context(after[0]) == ctx:
        moved = _moved([r for r in before if _calibration_context(r) == ctx],
                       [r for r in after if _calibration_context(r) == ctx], "calibration_ms")
        if moved is not None:
            return moved, "calibration query"
    moved = _moved(before, after, "reference_ms")
    return None if moved is None else (moved, "reference task")


def _moved(before: list[HistoryRun], after: list[HistoryRun], key: str) -> float | None:
    a = [math.log(float(r.machine[key])) for r in before if r.machine.get(key)]
    b = [math.log(float(r.machine[key])) for r in after if r.machine.get(key)]
    if len(a) < 2 or len(b) < 2:
        return None
    return math.exp(float(np.median(b)) - float(np.median(a)))


def _calibration_context(run: HistoryRun) -> tuple[str, str]:
    """What the calibration query's time depends on besides the machine: the server's
    version and the settings it ran with (the side's, in runs before 2026-12-06)."""
    sent = run.machine.get("calibration_settings", run.target.get("settings") or {})
    return str(run.target.get("server_version") or ""), json.dumps(sorted(sent.items()))


def _configuration_change(runs: list[HistoryRun], i: int) -> str | None:
    """What the user changed at run ``i`` or a run either side of it (a step's place can
    be a run off): the server's version, the run's settings, where the engine ran."""
    for j in (i, i - 1, i + 1):
        if not 0 < j < len(runs):
            continue
        was, now = runs[j - 1].target, runs[j].target
        parts = configuration_diff(was, now)
        where = [t.get("in_process") for t in (was, now)]
        if None not in where and where[0] != where[1]:  # the client path: ~0.1 ms a query (compare's note)
            parts.append("engine " + " → ".join("in chbench's process" if w else "in a worker process" for w in where))
        if parts:
            return f"run {runs[j].run_id}: " + ", ".join(parts)
    return None


def _mark_new(changes: list[SeriesChange], table: SeriesTable, reported: list[Reported]) -> None:
    where: dict[tuple[str, str], dict[str, int]] = {}
    for s in [*table.series, table.suite]:
        where[(s.name, s.key)] = {p.run.run_id: i for i, p in enumerate(s.points)}
    for c in changes:
        pos = where.get((c.query, c.key), {})
        for r in reported:
            if r.query != c.query or r.key != c.key or r.kind != c.kind:
                continue
            j = pos.get(r.run_id)
            # a trend's window starts later as runs are added: any trend reported inside it is it
            inside = c.kind == TREND and j is not None and c.index - CREEP_WINDOW <= j < (c.end_index or c.index + 1)
            if r.run_id == c.run_id or inside or (j is not None and abs(j - c.index) <= SAME_CHANGE):
                c.new = False
                break


__all__ = ["SUITE", "CheckOptions", "CheckResult", "SeriesChange", "check"]
