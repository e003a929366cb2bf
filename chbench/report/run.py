"""A run's own section: per query and side, what it measured — medians of client and
server time, server CPU and memory (query_log), rows read, errors — and, per query, the
distribution and the samples in run order."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chbench.export.numbers import count
from chbench.export.sections import Cell, Charts, Column, Details, Section, Table, Text
from chbench.report.charts import chart, key
from chbench.results import RunDocument, RunQuery
from chbench.stats.summary import median_ci
from chbench.targets.base import server_message

COLUMNS = [
    Column("query", align="left", key="name"), Column("side", align="left", key="side"),
    Column("runs", "d"), Column("errors", "d"), Column("median ms", ".2f", key="client_ms"),
    Column("95% CI", ".2f", key=("client_ms_ci_low", "client_ms_ci_high"), sep=" – "),
    Column("server ms", ".2f", key="server_ms"), Column("server CPU ms", ".1f", key="server_cpu_ms"),
    Column("memory bytes", ",.0f", key="memory_bytes"), Column("rows read", ",.0f", key="read_rows"),
]


@dataclass
class SideSamples:
    """One side of one query: its successful samples, metric by metric (client time is
    the median column, the run's own measure)."""

    client_ms: list[float | None] = field(default_factory=list)
    server_ms: list[float | None] = field(default_factory=list)
    cpu_ms: list[float | None] = field(default_factory=list)
    memory: list[float | None] = field(default_factory=list)
    read_rows: list[float | None] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""


def side_samples(q: RunQuery, side: str, set_aside: bool = False) -> SideSamples:
    out = SideSamples()
    for s in q.measured(side, set_aside):
        if s.error:
            out.errors += 1
            out.first_error = out.first_error or str(s.error.get("message", ""))
            continue
        sm = s.server_metrics or {}
        # without --server-metrics, the profile every server run keeps for explain has the
        # same query_log numbers (seen: CPU and memory '-' on 26.9 and 18.16 servers)
        counters = (s.profile or {}).get("counters") or {}
        pe = sm.get("profile_events") or counters
        cpu = None
        if pe:  # (query_log lists only the events that counted: a missing one is 0)
            cpu = (pe.get("UserTimeMicroseconds", 0) + pe.get("SystemTimeMicroseconds", 0)) / 1000.0
        out.client_ms.append(s.client_ms)
        out.server_ms.append(s.server_ms)
        out.cpu_ms.append(cpu)
        out.memory.append(_first(sm.get("memory_usage"), s.memory_bytes, counters.get("memory_usage")))
        out.read_rows.append(_first(sm.get("read_rows"), s.read_rows, counters.get("read_rows")))
    return out


def _first(*values: Any) -> Any:
    """The first value that is there."""
    return next((v for v in values if v is not None), None)


def median(values: list[Any]) -> float | None:
    v = [x for x in values if x is not None]
    return float(statistics.median(v)) if v else None


OPTIONAL = ("server ms", "server CPU ms", "memory bytes", "rows read")  # not every target reports them


def run_table(doc: RunDocument) -> Table:
    """Per query and side; a measure no side reported has no column (the embedded engine's
    CPU and memory were two columns of '-'): ``missing_line`` says which."""
    t = Table(COLUMNS)
    for q in doc.queries:
        for sid in q.side_ids():
            d = side_samples(q, sid, doc.never_quiet)
            ok = [x for x in d.client_ms if x is not None]
            lo, hi = median_ci(ok) if ok else (None, None)
            errors = Cell(d.errors)  # what they were: a line under the table (error_lines)
            side = q.sides.get(sid)
            if not d.client_ms and (q.skipped(sid) or (side is not None and side.failed)):
                errors = Cell(0, text="skipped" if q.skipped(sid) else "set-up failed")  # why: the test's line
            t.add(q.name, sid, len(d.client_ms), errors, median(d.client_ms), (lo, hi), median(d.server_ms),
                  median(d.cpu_ms), median(d.memory), median(d.read_rows))
    empty = [i for i, c in enumerate(t.columns) if c.title in OPTIONAL and all(r[i].value is None for r in t.rows)]
    if t.rows and empty:
        t.columns = [c for i, c in enumerate(t.columns) if i not in empty]
        t.rows = [[cell for i, cell in enumerate(r) if i not in empty] for r in t.rows]
    return t


def missing_line(table: Table) -> list[Text]:
    """The measures no side reported, once under the table."""
    shown = {c.title for c in table.columns}
    gone = [c for c in OPTIONAL if c not in shown]
    return [Text(f"not reported by any side: {', '.join(gone)}")] \
        if gone and table.rows else []


def run_section(path: str, doc: RunDocument, charts: bool = True) -> Section:
    """The run's table and notes; ``charts``: each query's samples drawn (False where the
    comparison draws them, under "Per query")."""
    targets = "; ".join(f"{k} = {v}" for k, v in doc.side_labels().items())
    table = run_table(doc)
    blocks: list[Any] = [Text(f"{path} — status {doc.status}; targets: {targets}"), *test_lines(doc),
                         table, *missing_line(table), *error_lines(doc), *set_aside_lines(doc), *time_pool_lines(doc),
                         *(Text(f"Note: {n}") for n in doc.meta.extra.get("notes") or [])]
    if charts:
        for q in doc.queries:
            sides = {sid: side_samples(q, sid, doc.never_quiet) for sid in q.side_ids()}
            if not any(d.client_ms for d in sides.values()):
                continue
            k = key(path + q.name)
            blocks.append(Details(q.name, [Charts([
                chart(f"dist-{k}", "distribution", [(s, [x for x in d.client_ms if x is not None])
                                                    for s, d in sides.items()]),
                chart(f"order-{k}", "run_order", [(s, d.client_ms, d.server_ms) for s, d in sides.items()]),
            ])]))
    return Section(f"Run: {Path(path).name}", "run", blocks)


def test_lines(doc: RunDocument) -> list[Text]:
    """Performance tests: one line each — queries run and skipped, and why a test did not run."""
    out = []
    for t in doc.tests:
        names = set(t.get("queries") or [])
        qs = [q for q in doc.queries if q.name in names]
        skipped = [q for q in qs if any(q.skipped(sid) for sid in q.side_ids())]
        line = f"test {t['name']}: {count(len(qs), 'query')}"
        if skipped and not t.get("skipped"):
            why = sorted({f"{sid}: {q.skipped(sid)}" for q in skipped for sid in q.side_ids() if q.skipped(sid)})
            line += f", {len(skipped)} skipped ({'; '.join(why)})"
        if t.get("not_chosen"):
            line += f", {len(t['not_chosen'])} of {t.get('expanded')} not chosen (--max-queries)"
        for what in ("error", "skipped", "failed"):
            v = t.get(what)
            if v:
                line += f" — {what}: " + (v if isinstance(v, str) else "; ".join(
                    f"{sid}: {_failure(x)}" for sid, x in v.items()))
        out.append(Text(line[:400]))
    return out


def _failure(x: Any) -> str:
    """A test's set-up failure on one side: the element and the server's message."""
    return x if isinstance(x, str) else f"{x.get('element', '')}: {server_message(str(x['error']['message']), 300)}"


def error_lines(doc: RunDocument) -> list[Text]:
    """Each query and side that had errors: how many and the server's first message, a line
    under the table (in a cell, a message of 60 characters widened the column until the
    queries' names were cut: seen on a perf test against 18.16)."""
    out = []
    for q in doc.queries:
        for sid in q.side_ids():
            d = side_samples(q, sid, doc.never_quiet)
            if d.errors:
                n = f"{d.errors} error{'s' if d.errors != 1 else ''}"
                out.append(Text(f"{q.name} on {sid}: {n}, the first: {server_message(d.first_error, 300)}"))
    return out


def set_aside_lines(doc: RunDocument) -> list[Text]:
    """Runs measured on a busy machine and measured again (``--quiet-wait``)."""
    rec = doc.machine.get("set_aside")
    if not rec or not (rec.get("rounds") or rec.get("samples")):
        return []
    if rec.get("by") == "timeline":
        what = f"{rec['samples']} runs set aside: other processes used more than {rec['threshold']:.0%} of the CPUs " \
               "while they ran"
    else:
        n = sum(int(r["to_round"]) - int(r["from_round"]) + 1 for r in rec["rounds"])
        what = f"{n} rounds set aside: other processes used more than {rec['threshold']:.0%} of the CPUs"
    line = (f"{what}; their samples are kept in the file (set_aside) and were measured again ({rec['spent_s']:.0f} s "
            f"of {rec['quiet_wait_s']:.0f} s)")
    if rec.get("never_quiet"):
        line += ("; the machine never got quiet: the rest was measured as it was, and every run counts, those set "
                 "aside too (the machine as it was for the whole run)")
    return [Text(line)]


def time_pool_lines(doc: RunDocument) -> list[Text]:
    """Adaptive side by side: queries that went on past their budget, undecided, on time
    others left (stats/stopping.py)."""
    out = []
    for pool in doc.meta.extra.get("time_pool") or []:
        beyond = pool.get("queries_beyond_budget") or {}
        if beyond:
            who = ", ".join(f"{name} +{s:.0f} s" for name, s in sorted(beyond.items(), key=lambda kv: -kv[1]))
            out.append(Text(f"{len(beyond)} quer{'y' if len(beyond) == 1 else 'ies'} went on past the "
                            f"{pool['budget_s']:.0f} s budget to decide a verdict, on the {pool['saved_s']:.0f} s "
                            f"others left unused: {who}"))
    return out
