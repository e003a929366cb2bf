"""What ``chbench history`` prints and draws: the changes a check found, the stored runs,
one query's series, and the HTML report (an overview of every series, the recent changes
first, then a chart per query: each run's median with its interval, changes marked, the
run's labels on hover)."""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

from chbench.export.numbers import count
from chbench.export.sections import Block, Charts, Column, Details, Report, Section, Table, Text
from chbench.history.check import CONFIGURATION_CHANGED, CheckResult
from chbench.history.record import HistoryRun, iso
from chbench.report.charts import chart, key
from chbench.stats.summary import median_ci


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}"


def _change_line(c: Any) -> str:
    text = f"{c.query}: {_pct(c.ratio)} [{_pct(c.ci[0])}, {_pct(c.ci[1])}] from run {c.index} ({c.run_id}, " \
           f"{iso(c.started_at)[:16]})"
    if c.rate_per_week is not None:
        text += f", {c.rate_per_week:+.2%} per week"
    return f"  {'NEW ' if c.new else '    '}{c.kind:<11} {text}\n"


def check_text(result: CheckResult, location: str) -> str:
    out = [f"chbench history check: {count(result.runs, 'run')}, {len(result.series)} series in {location}\n"]
    if not result.changes:
        out.append("  no change in any series\n")
    for c in result.changes:
        out.append(_change_line(c))
        out += [f"{'':16}{n}\n" for n in c.notes if not n.startswith(CONFIGURATION_CHANGED)]
    configs = list(dict.fromkeys(n for c in result.changes for n in c.notes if n.startswith(CONFIGURATION_CHANGED)))
    out += [f"  note: {n}\n" for n in configs]  # once, not under each query that changed with it
    short = list(dict.fromkeys(s.query for s in result.series if s.too_short))  # a name, once
    if short:
        out.append(f"  too few runs to tell yet ({', '.join(short[:6])}{' …' if len(short) > 6 else ''}): "
                   "8 needed\n")
    spikes = sum(len(s.spikes) for s in result.series)
    if spikes:
        out.append(f"  {spikes} one-run spike(s) left out (never an alert): chbench history show QUERY\n")
    out += [f"  note: {n}\n" for n in result.notes]
    out += [f"  note: {s.query}: {n}\n" for s in result.series for n in s.notes]
    new = result.new_regressions
    out.append(f"{len(new)} new regression(s)\n" if new else "no new regression\n")
    return "".join(out)


def list_text(runs: list[HistoryRun], location: str) -> str:
    out = [f"{count(len(runs), 'run')} in {location}\n"]
    for r in runs:
        labels = " ".join(f"{k}={v}" for k, v in sorted(r.labels.items()))
        out.append(f"  {r.run_id}  {iso(r.started_at)[:19]}  {count(len(r.queries), 'query'):>11}  "
                   f"{r.target.get('server_version') or '?':<12} {r.baseline[0]:<12} {labels}\n")
    return "".join(out)


def _points(query: str, runs: list[HistoryRun], series: str | None = None) -> list[dict[str, Any]]:
    """The query's runs, of one series (its ``key``) when given: an edited query starts
    a series of its own, and a change's ``index`` counts in it."""
    out = []
    for r in runs:
        for q in r.queries:
            if q.name == query and q.client_ms and series in (None, q.key):
                lo, hi = median_ci(q.client_ms) if len(q.client_ms) >= 3 else (q.median_ms, q.median_ms)
                out.append({"run_id": r.run_id, "started_at": iso(r.started_at), "median_ms": q.median_ms,
                            "ci_ms": [lo, hi], "runs": len(q.client_ms), "labels": r.labels, "key": q.key,
                            "version": r.target.get("server_version")})
    return out


def show_json(query: str, runs: list[HistoryRun], result: CheckResult) -> dict[str, Any]:
    return {"query": query, "series": _points(query, runs),
            "changes": [c.to_json() for c in result.changes if c.query == query],
            "summary": [s.to_json() for s in result.series if s.query == query]}


def _series(query: str, result: CheckResult) -> list[str | None]:
    """The keys of the query's series, as the check found them (None: all its runs)."""
    return [s.key for s in result.series if s.query == query] or [None]


def show_text(query: str, runs: list[HistoryRun], result: CheckResult) -> str:
    out = []
    keys = _series(query, result)
    for k in keys:
        pts = _points(query, runs, k)
        marks = {c.run_id: c for c in result.changes if c.query == query and k in (None, c.key)}
        spikes = {i for s in result.series if s.query == query and s.key == k for i in s.spikes}
        other = f" (series {k}: its SQL or settings differ from the other series')" if len(keys) > 1 else ""
        out.append(f"{query}: {len(pts)} runs{other}\n")
        for i, p in enumerate(pts):
            c = marks.get(p["run_id"])
            tag = f"  ← {c.kind} {_pct(c.ratio)}" if c else ("  (spike, left out)" if i in spikes else "")
            out.append(f"  {i:>4}  {p['started_at'][:16]}  {p['median_ms']:>10.2f} ms  [{p['ci_ms'][0]:.2f}, "
                       f"{p['ci_ms'][1]:.2f}]  {p['run_id']}{tag}\n")
    return "".join(out)


def history_report(runs: list[HistoryRun], result: CheckResult) -> Report:
    changes = sorted(result.changes, key=lambda c: -c.started_at)  # the recent ones first
    blocks: list[Block] = [Text(f"{result.runs} runs, {len(result.series)} series, {len(result.changes)} change(s), "
                                f"{len(result.new_regressions)} new regression(s)", kind="summary")]
    if changes:
        t = Table([Column("query", align="left"), Column("kind", align="left"), Column("change", align="left"),
                   Column("from run", align="left"), Column("compared", align="left"), Column("new", align="left"),
                   Column("notes", align="left")],
                  title="Changes, the most recent first")
        by_id = {r.run_id: r for r in runs}
        for c in changes:
            cmp = _compare_hint(c, by_id)
            t.add(c.query, c.kind, f"{_pct(c.ratio)} [{_pct(c.ci[0])}, {_pct(c.ci[1])}]"
                  + (f", {c.rate_per_week:+.2%}/week" if c.rate_per_week is not None else ""),
                  f"{c.index} · {iso(c.started_at)[:16]}", cmp, "new" if c.new else "", "; ".join(c.notes))
        blocks.append(t)
    blocks += [Text(n) for n in result.notes]
    # one chart per series: an edited query has two, whose change indexes count in each
    ids = sorted(dict.fromkeys((s.query, s.key) for s in result.series),  # the series order for ties
                 key=lambda nk: min([-c.started_at for c in changes if (c.query, c.key) == nk] or [0.0]))
    several = {n for n, _ in ids if sum(1 for m, _ in ids if m == n) > 1}
    title = {nk: f"{nk[0]} ({nk[1][:8]})" if nk[0] in several else nk[0] for nk in ids}
    series = {nk: _points(nk[0], runs, nk[1]) for nk in ids}
    mine = {nk: [c for c in result.changes if (c.query, c.key) == nk] for nk in ids}
    if ids:
        blocks.append(Charts([chart(key("history-overview"), "history_overview",
                                    [(title[nk], [p["median_ms"] for p in series[nk]], [c.index for c in mine[nk]])
                                     for nk in ids])]))
    for nk in ids:
        hover = [f"{p['started_at'][:16]} {p['run_id']} {p['version'] or ''} "
                 + " ".join(f"{k}={v}" for k, v in sorted(p["labels"].items())) for p in series[nk]]
        blocks.append(Details(f"{title[nk]} — {len(series[nk])} runs, {len(mine[nk])} change(s)", [
            Charts([chart(key(f"history-{nk[0]}-{nk[1]}"), "history_series", title[nk],
                          [p["median_ms"] for p in series[nk]], [p["ci_ms"] for p in series[nk]],
                          [(c.index, c.kind) for c in mine[nk]], hover)]),
            *[b for c in mine[nk] for b in _why(c, {r.run_id: r for r in runs})]]))
    return Report("chbench history", [Section("chbench history", "history", blocks)])


def _compare_hint(c: Any, by_id: dict[str, HistoryRun]) -> str:
    """The command comparing the last run before a change with the first after: their
    files where the store knows them, else the two runs' ids."""
    if not c.before:
        return ""
    a, b = by_id.get(c.before[0]), by_id.get(c.before[1])
    if a is not None and b is not None and a.source and b.source:
        return f"chbench compare {a.source} {b.source}"
    return f"runs {c.before[0]} → {c.before[1]}"


def _why(c: Any, by_id: dict[str, HistoryRun]) -> list[Block]:
    """A change and the two runs either side of it: their files compared (``chbench
    compare``) and the query explained from the server's profiles where the runs have
    them (``chbench explain``); a pointer when the files are not at hand."""
    if not c.before:
        return []
    a, b = by_id.get(c.before[0]), by_id.get(c.before[1])
    head = f"{c.kind} {_pct(c.ratio)} from run {c.index}: the last run before ({c.before[0]}) against the first " \
           f"after ({c.before[1]})"
    if a is None or b is None or not (os.path.isfile(a.source) and os.path.isfile(b.source)):
        return [Text(f"{head}: their files are not here (chbench compare A.json B.json on them gives the why)")]
    from chbench.compare import CompareOptions, build_comparison
    from chbench.errors import ChbenchError
    from chbench.explain.build import explain_rows
    from chbench.report.explain import explain_blocks

    try:
        cmp = build_comparison([a.source, b.source], CompareOptions())
        whys = explain_rows(cmp.doc, cmp.a, cmp.b, cmp.rename, cmp.paired, every=True)
    except ChbenchError as e:
        return [Text(f"{head}: {e}")]
    row = next((r for r in cmp.doc.queries if r.name == c.query), None)
    if row is None:
        return [Text(f"{head}: the files do not both have {c.query}")]
    verdict = f"compare says {row.verdict}" + (f" ({_pct(row.ratio)})" if row.ratio else "")
    out: list[Block] = [Text(f"{head} — {verdict}; {a.source} → {b.source}")]
    if c.query in whys:
        out += explain_blocks(cmp, {c.query: whys[c.query]}, charts=True)
    return out


def history_html(runs: list[HistoryRun], result: CheckResult) -> str:
    from chbench.export import get_exporter

    return str(get_exporter("html").render(history_report(runs, result)))


def export_json(runs: list[HistoryRun], samples: bool = True, indent: int | None = None) -> str:
    """``{"runs": [...]}``: every run as stored (``samples=False``: each query's median only)."""
    out = []
    for run in runs:
        d = run.to_json()
        if not samples:
            d["queries"] = [{"name": q.name, "key": q.key, "median_ms": q.median_ms, "errors": q.errors}
                            for q in run.queries]
        out.append(d)
    return json.dumps({"runs": out}, indent=indent, separators=None if indent else (",", ":")) + "\n"


def export_csv(runs: list[HistoryRun]) -> str:
    """One row per run and query, every sample in one space-separated column."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "started_at", "labels", "server_version", "host", "query", "key", "median_ms", "runs",
                "errors", "client_ms"])
    for r in runs:
        for q in r.queries:
            w.writerow([r.run_id, iso(r.started_at), json.dumps(r.labels, sort_keys=True),
                        r.target.get("server_version") or "", r.baseline[0], q.name, q.key,
                        "" if q.median_ms is None else f"{q.median_ms:.4f}", len(q.client_ms), q.errors,
                        " ".join(f"{t:.4f}" for t in q.client_ms)])
    return buf.getvalue()
