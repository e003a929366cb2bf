"""Why each changed query changed: its top explanations (facts, then counters and
operators with A, B, the ratio and its interval), and in the HTML report the operators'
times side by side and a table of only the counters that changed."""

from __future__ import annotations

import math
from typing import Any

from chbench.compare import Comparison
from chbench.export.numbers import change
from chbench.export.sections import Block, Cell, Charts, Column, Details, Heading, Section, Table, Text
from chbench.report.charts import chart, key
from chbench.report.comparison import side_lines
from chbench.stats.explain import MetricChange, ProfileRun, Why, number
from chbench.stats.verdict import FLAGGED

TOP = 5
COLUMNS = [
    Column("rank", "d", key="rank"),
    Column("kind", align="left", key="kind"),
    Column("name", align="left", key="name"),
    Column("A", ",.6g", key="a"),
    Column("B", ",.6g", key="b"),
    Column("ratio", ".3g", key="ratio"),
    Column("95% CI", ".3g", key=("ci_low", "ci_high"), sep=" – "),
    Column("p adj.", ".3g", key="p_adjusted"),
]


def why_lines(cmp: Comparison) -> list[Text]:
    """One line per slower or faster query (console and Markdown under the table). A reason
    with no evidence behind it (no profile to read: an engine before 26.9 keeps no query_log)
    is the same for every query, so it is said once, naming them."""
    lines: list[Text] = []
    bare: dict[str, list[Any]] = {}
    for r in cmp.doc.queries:
        if not (r.why and r.why.get("summary")):
            continue
        if r.why.get("counters") or r.why.get("operators"):
            lines.append(Text(f"Why {r.name} ({change(r.ratio)}): {r.why['summary']}", "summary", {"data-why": r.name}))
        else:
            bare.setdefault(r.why["summary"], []).append(r)
    for summary, rows in bare.items():
        # every changed query of an embedded run said the same: their names would fill lines
        names = (", ".join(f"{r.name} ({change(r.ratio)})" for r in rows) if len(rows) <= 3
                 else f"the {len(rows)} changed queries")
        lines.append(Text(f"Why {names}: {summary}", "summary", {"data-why": " ".join(r.name for r in rows)}))
    return lines


def unknown_lines(why: Why) -> list[Text]:
    """The counters left uncompared because one side's version may not have them."""
    out = []
    for side, names in sorted(why.unknown.items()):
        other = "B" if side == "a" else "A"
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        what = (f"{side.upper()}'s server version does not have" if side in why.listed else
                f"{other} logged and {side.upper()}'s server (another version) never did: 0 there, or a counter it "
                "does not have")
        out.append(Text(f"not compared: {len(names)} counter{'s' if len(names) > 1 else ''} {what} ({shown})"))
    return out


def _table(ranked: list[MetricChange], top: int) -> Table:
    t = Table(COLUMNS, filterable=False)
    for i, m in enumerate(ranked[:top], 1):
        # a metric that was 0 on one side has a ratio of value + 1: said as new or gone
        ratio = Cell(m.ratio, text="new" if m.a == 0 else "gone" if m.b == 0 else None)
        ci = Cell(m.ci, text="–" if m.a == 0 or m.b == 0 else None)
        t.add(i, m.kind, m.name, Cell(m.a, text=number(m.a)), Cell(m.b, text=number(m.b)), ratio, ci, m.p_adj)
    return t


def explain_blocks(cmp: Comparison, whys: dict[str, Why], charts: bool, top: int = TOP) -> list[Block]:
    blocks: list[Block] = []
    rows = {r.name: r for r in cmp.doc.queries}
    for name, why in whys.items():
        row = rows[name]
        head = f"{name}: {row.verdict} {change(row.ratio)}" if row.ratio is not None else f"{name}: {row.verdict}"
        inner: list[Block] = []
        if why.note:
            inner.append(Text(why.note))
        inner += [Text(f"– {f}") for f in why.facts]
        if why.top:
            inner.append(_table(why.top, top))
        elif not why.note:
            inner.append(Text(f"no counter or operator changed ({why.tested} tested)"))
        inner += unknown_lines(why)
        if charts:
            ops = _operator_rows(cmp, name)
            if ops:
                inner.append(Charts([chart(key(f"ops-{name}"), "operator_times", ops)]))
            stacks = _stacks(cmp, name)
            if stacks is not None:
                inner.append(Charts([chart(key(f"flame-{name}"), "flame_diff", *stacks)]))
            if why.counters:
                inner.append(_table(why.counters, len(why.counters)))
        # HTML folds each query; text reports show it whole (consoles print no folds)
        blocks += [Details(head, inner, style=row.verdict)] if charts else [Heading(head), *inner]
    return blocks


def _runs(cmp: Comparison, name: str) -> tuple[list[ProfileRun], list[ProfileRun]]:
    """A query's profiled runs on each side (B's query matched to A's name)."""
    b = next((runs for n, runs in cmp.b.profiles.items() if cmp.rename.get(n, n) == name), [])
    return cmp.a.profiles.get(name) or [], b


def _operator_rows(cmp: Comparison, name: str) -> list[tuple[str, float, float]]:
    import numpy as np

    pa, pb = _runs(cmp, name)
    names = sorted({n for r in pa + pb for n in r.operators})
    out = []
    for n in names:
        a = float(np.median([r.operators.get(n, 0.0) for r in pa])) if pa else 0.0
        b = float(np.median([r.operators.get(n, 0.0) for r in pb])) if pb else 0.0
        out.append((n, a, b))
    out.sort(key=lambda r: -max(r[1], r[2]))
    return out[:12]


def _stacks(cmp: Comparison, name: str) -> tuple[dict[str, float], dict[str, float]] | None:
    """Both sides' sampled stacks of a query, summed over its runs (None: a side has none)."""
    out = []
    for runs in _runs(cmp, name):
        total: dict[str, float] = {}
        for r in runs:
            for stack, n in r.stacks.items():
                total[stack] = total.get(stack, 0.0) + n
        if not total:
            return None
        out.append(total)
    return out[0], out[1]


def stacks_lines(info: dict[str, Any]) -> list[Text]:
    """Where a side has no sampled stacks, why (once per side)."""
    return [Text(f"Side {side}: {what['stacks_note']}", "summary") for side, what in sorted(info.items())
            if what.get("stacks_note")]


def explain_section(cmp: Comparison, whys: dict[str, Why], charts: bool, info: dict[str, Any],
                    top: int = TOP, asked: list[str] | None = None) -> Section:
    blocks: list[Block] = [*side_lines(cmp.doc)]
    for side, what in sorted(info.items()):
        for note in what.get("notes") or []:
            blocks.append(Text(f"Side {side}: {note}", "summary"))
    if charts:  # the flame graphs are the HTML report's: there, say where they are missing
        blocks += stacks_lines(info)
    # changed, but a side kept no profiles for them (seen: 24.8 → 26.9, 9 changed, said "No query slower")
    unexplained = [q for q in cmp.doc.queries if q.verdict in FLAGGED and q.name not in whys]
    if not whys and asked:  # asked for by name: what is missing is the evidence, not a change
        blocks.append(Text(f"Nothing to explain {', '.join(asked)} with: neither side kept its counters or "
                           "operator times (see the notes above).", "summary"))
    elif unexplained and not asked:
        names = ", ".join(f"{q.name} {q.verdict} {change(q.ratio)}" for q in unexplained[:5])
        more = f" and {len(unexplained) - 5} more" if len(unexplained) > 5 else ""
        n = f"{len(unexplained)}{' other' if whys else ''} {'query' if len(unexplained) == 1 else 'queries'}"
        blocks.append(Text(f"{n} changed ({names}{more}), but without counters or operator times on both sides "
                           "there is nothing to explain them with (see the notes above).", "summary"))
    if not whys and not asked and not unexplained:
        # a large change not shown (unstable) is still worth a look: name the largest
        moved = sorted((q for q in cmp.doc.queries if q.verdict == "unstable" and q.ratio and q.ratio > 0),
                       key=lambda q: -abs(math.log(q.ratio or 1.0)))
        hint = f" — unstable, moved most: {', '.join(f'{q.name} {change(q.ratio)}' for q in moved[:3])}" \
            if moved else ""
        blocks.append(Text(f"No query slower or faster: nothing to explain (chbench explain --query NAME explains "
                           f"one anyway{hint}).", "summary"))
    blocks += explain_blocks(cmp, whys, charts, top)
    return Section("Why", "explain", blocks)
