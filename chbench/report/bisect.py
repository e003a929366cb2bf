"""The section of a bisect file: the change(s) found, named by their versions and size,
then every comparison made with its interval and decision."""

from __future__ import annotations

from typing import Any

from chbench.export.sections import Cell, Column, Section, Table, Text
from chbench.results import BisectDocument


def bisect_section(doc: BisectDocument, path: str | None = None) -> Section:
    b = doc.bisect
    q = doc.query
    title = f"chbench bisect ({b.get('kind')}): {' '.join(str(q.get('sql', '')).split())[:100]}"
    blocks: list[Any] = [Text(headline(b), kind="summary")]
    for note in b.get("notes") or []:
        blocks.append(Text(note))
    steps = Table([Column("old", align="left"), Column("new", align="left"), Column("why", align="left"),
                   Column("change [99% interval]", align="left", key="change"), Column("decision", align="left"),
                   Column("rounds", ",d")],
                  title=f"Every comparison ({b.get('comparisons', 0)}), in the order made")
    for st in b.get("steps") or []:
        word = st["decision"] + (f" (leaning {st['leaning']})" if st.get("undecided") else "")
        steps.add(st["old"], st["new"], st.get("why", ""), st.get("summary", ""),
                  Cell(st["decision"], text=word, style="slower" if st["leaning"] == "changed" else "no change"),
                  st.get("rounds"))
    blocks.append(steps)
    if path:
        blocks.append(Text(f"results: {path} ({len(doc.runs)} run{'' if len(doc.runs) == 1 else 's'}, every sample "
                           "kept)"))
    return Section(title, "bisect", blocks)


def headline(b: dict[str, Any]) -> str:
    """"26.3.9.1 → 26.5.1.1: +23% [+19%, +27%]", or what was found instead."""
    changes = b.get("changes") or []
    if not b.get("found"):
        return f"no change between {b.get('old')} and {b.get('new')}"
    if not changes:
        return "the search stopped before it found the change"
    parts = []
    for c in changes:
        size = c.get("summary") or ""
        confirmed = " (undecided: leaning)" if c.get("undecided") else \
            "" if c.get("confirmed") else " (not confirmed between the adjacent versions)"
        small = " (under the threshold)" if c.get("beyond_threshold") is False else ""
        gap = c.get("not_installed_between") or []
        gap_s = f" (spans {', '.join(gap)}, not installed)" if gap else ""
        parts.append(f"{c['last_same']} → {c['first_changed']}: {size}{small}{confirmed}{gap_s}")
    head = "first change: " if len(changes) == 1 else f"{len(changes)} changes in the range: "
    steps = b.get("steps") or []
    if steps and steps[0].get("undecided"):  # OLD against NEW itself: the whole search is a lean
        head = "undecided, leaning changed — " + head
    big = b.get("largest")
    tail = f" — the largest: {big['last_same']} → {big['first_changed']}" if big else ""
    return head + "; ".join(parts) + tail
