"""A replay's section: how well the schedule held, what was skipped, the per-hash table
(with two targets: ratio, interval and verdict per normalized query), the answers, and
charts of planned vs actual starts and of latency over time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chbench.export.numbers import num
from chbench.export.sections import Cell, Charts, Column, Section, Table, Text
from chbench.replay.analysis import backlog_of
from chbench.report.charts import chart, key
from chbench.results.replay import ReplayDocument

TOP_ROWS = 50  # the per-hash table shows the normalized queries with the most runs


def schedule_line(s: dict[str, Any]) -> str:
    lat = s.get("lateness_ms") or {}
    text = (f"Schedule: {s.get('planned', 0):,} planned, {s.get('sent', 0):,} sent, {s.get('late', 0):,} late "
            f"(> {s.get('late_threshold_ms', 5):g} ms), {s.get('dropped', 0):,} dropped, "
            f"{s.get('skipped', 0):,} skipped")
    if lat.get("p99") is not None:
        text += f"; lateness p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.2f} ms"
    return text + "."


def _hash_table(doc: ReplayDocument) -> Table:
    ids = [t["id"] for t in doc.targets]
    verdicts = {r["name"]: r for r in (doc.comparison or {}).get("queries", [])}
    # rows named by the query's text; its normalized hash is in the JSON and each HTML row's
    # data-hash (as a 20-digit column it left the text 9 characters in a table 140 wide)
    cols = [Column("query", align="left", key="name"), Column("runs", ",d"),
            Column("captured p50 ms", ".2f", key="original_p50_ms")]
    if len(ids) == 2:  # A / B in one cell: thirteen columns wrapped every number in 140 characters
        a, b = ids
        cols += [Column(f"p50 ms {a} / {b}", ".2f", key=(f"{a}_p50_ms", f"{b}_p50_ms")),
                 Column(f"p99 ms {a} / {b}", ".2f", key=(f"{a}_p99_ms", f"{b}_p99_ms")),
                 Column(f"errors {a} / {b}", ",d", key=(f"{a}_errors", f"{b}_errors")),
                 Column("ratio", ".3f"), Column("95% CI", "interval", key=("ci_low", "ci_high")),
                 Column("verdict", align="left")]
    else:
        for side in ids:
            cols += [Column(f"{side} p50 ms", ".2f", key=f"{side}_p50_ms"),
                     Column(f"{side} p99 ms", ".2f", key=f"{side}_p99_ms"),
                     Column(f"{side} errors", ",d", key=f"{side}_errors")]
    table = Table(cols)
    rows = sorted(doc.by_hash, key=lambda r: -int(r.get("count") or 0))[:TOP_ROWS]
    for r in rows:
        cells: list[Any] = [r.get("name", ""), r.get("count", 0), r.get("original_p50_ms")]
        per = [(r.get("sides") or {}).get(side) or {} for side in ids]
        if len(ids) == 2:
            cells += [tuple(s.get(k) for s in per) for k in ("p50_ms", "p99_ms")]
            cells.append(tuple(s.get("errors", 0) for s in per))
            v = verdicts.get(r["hash"]) or {}
            ci = v.get("ci")
            cells += [v.get("ratio"), tuple(ci) if ci else None, Cell(v.get("verdict", ""), style=v.get("verdict", ""))]
        else:
            cells += [x for s in per for x in (s.get("p50_ms"), s.get("p99_ms"), s.get("errors", 0))]
        table.add(*cells, key=("data-hash", r["hash"]))
    return table


BEHIND = 0.1  # more than this share of the queries started late: the target did not keep up


def behind_lines(doc: ReplayDocument) -> list[str]:
    """A target that could not keep up with the captured pace, said in words: its
    latencies then describe an overloaded target, not the workload as captured."""
    speed = doc.options.get("speed", 1)
    out = []
    for t in doc.targets:
        sch = t.get("schedule") or {}
        sent, late = sch.get("sent") or 0, sch.get("late") or 0
        if sent and late / sent > BEHIND:
            p50 = (sch.get("lateness_ms") or {}).get("p50")
            out.append(f"{t['id']} fell behind at {speed:g}× the captured pace: {late:,} of {sent:,} queries "
                       f"started late (lateness p50 {num(p50, ',.0f')} ms, {sch.get('connections', 0):,} connections "
                       "open). The target, or this machine sending to it, could not hold that pace: its latencies "
                       "are those of an overloaded system; a lower --speed measures it at a pace it holds.")
            continue
        backlog = backlog_of(doc.samples.get(t["id"]) or {})  # sent on time, and waited at the server
        if backlog is not None and backlog.overloaded:
            out.append(f"{t['id']}'s statements waited on each other ({backlog.describe()}): the server was past "
                       f"its capacity at {speed:g}× the captured pace, and their times are mostly waiting — a replay "
                       "this loaded moves by several times from one replay to the next; a lower --speed measures "
                       "the workload at a pace the server holds.")
    return out


def replay_section(path: str, doc: ReplayDocument, charts: bool = True) -> Section:
    targets = "; ".join(f"{t['id']}: {t.get('label') or t.get('url')} ({t.get('server_version')})"
                        for t in doc.targets)
    opts = doc.options
    blocks: list[Any] = [
        Text(f"{path} — status {doc.status}; {targets}; speed {opts.get('speed', 1):g}×, "
             f"{opts.get('mode', 'open')} mode" + (f", targets {opts.get('order')}" if len(doc.targets) > 1 else "")
             + ("; read-only" if opts.get("read_only", True) else "; writes allowed")),
        Text(schedule_line(doc.schedule), kind="summary")]
    if opts.get("mode", "open") == "open":
        blocks += [Text(line, kind="summary") for line in behind_lines(doc)]
    if doc.skipped:
        blocks.append(Text("Not replayed: " + ", ".join(f"{n:,} {r}" for r, n in doc.skipped.items()) + "."))
    for t in doc.targets:
        for note in t.get("notes") or []:
            blocks.append(Text(f"{t['id']}: {note}"))
    summary = (doc.comparison or {}).get("summary") or {}
    if summary.get("verdicts"):
        geo = summary.get("geomean") or {}
        counts = ", ".join(f"{n} {v}" for v, n in summary["verdicts"].items() if n)
        text = f"Per normalized query, B against A: {counts}"
        if geo.get("ratio"):
            ci = geo.get("ci") or [None, None]
            text += f"; geometric mean of the ratios {geo['ratio']:.3f}" + (
                f" [{ci[0]:.3f}, {ci[1]:.3f}]" if None not in ci else "")
        blocks.append(Text(text + ".", kind="summary"))
    one_sided = [r for r in doc.by_hash if r.get("errors_on_one_side")]
    if one_sided:
        blocks.append(Text(f"Errors on one side only: {len(one_sided)} normalized queries ("
                           + ", ".join(f"{r['hash']} on {r['errors_on_one_side']}" for r in one_sided[:5]) + ")."))
    if doc.answers:
        a = doc.answers
        blocks.append(Text(f"Answers: {a.get('checked', 0)} normalized queries checked, {a.get('equal', 0)} equal, "
                           f"{a.get('changed', 0)} changed, {a.get('not_compared', 0)} not compared.",
                           kind="summary"))
    blocks.append(_hash_table(doc))
    if charts and doc.samples:
        k = key(path)
        planned = [(sid, col.get("planned_s", []), col.get("lateness_ms", [])) for sid, col in doc.samples.items()]
        latency = [(sid, col.get("planned_s", []), col.get("latency_ms", [])) for sid, col in doc.samples.items()]
        drawn = [chart(f"latency-{k}", "replay_latency", latency)]
        if opts.get("mode", "open") == "open":
            drawn.insert(0, chart(f"schedule-{k}", "replay_schedule", planned))
        blocks.append(Charts(drawn))
    return Section(f"Replay: {Path(path).name}", "replay", blocks)
