"""What an upgrade changed besides speed (``chbench upgrade`` files): answers, plans side by
side, and the settings whose default changed — blocks of the comparison section."""

from __future__ import annotations

from typing import Any

from chbench.compare.checks import differing_rows
from chbench.compare.document import ComparisonDoc
from chbench.export.sections import Block, Cell, Column, Details, Heading, Table, Text

ANSWER_COLUMNS = [
    Column("query", align="left", key="name"),
    Column("answer", align="left", key="answer"),
    Column("rows A / B", "d", key=("a_rows", "b_rows")),
    Column("checksum A", align="left", key="a_checksum"),
    Column("checksum B", align="left", key="b_checksum"),
    Column("plan", align="left", key="plan"),
    Column("pipeline", align="left", key="pipeline"),
]
SETTING_COLUMNS = [Column("setting", align="left", key="name"), Column("default A", align="left", key="a"),
                   Column("default B", align="left", key="b"), Column("mentioned by", align="left", key="mentioned_by")]


def _answer_word(ans: dict[str, Any]) -> str:
    if ans["equal"] is True:
        return "equal"
    if ans["equal"] is False:
        return "answer changed"
    if "error" in ans["a"] or "error" in ans["b"]:
        return "fails on " + ("both" if "error" in ans["a"] and "error" in ans["b"] else
                              "A only" if "error" in ans["a"] else "B only")
    return "not compared"


def _changed(v: bool | None) -> str:
    return "changed" if v else "same" if v is False else "-"


def upgrade_blocks(doc: ComparisonDoc, checks: dict[str, Any], full: bool = True) -> list[Block]:
    """``full``: every changed setting (the HTML report); else those the workload mentions."""
    answers, plans = checks.get("answers") or {}, checks.get("plans") or {}
    blocks: list[Block] = [Heading("Answers and plans (checked on both sides after the timed runs)")]
    t = Table(ANSWER_COLUMNS)
    for row in doc.queries:
        ans, plan = answers.get(row.name), plans.get(row.name) or {}
        if ans is None:
            continue
        word = _answer_word(ans)
        t.add(row.name, Cell(word, style="answer changed" if word == "answer changed" else ""),
              (ans["a"].get("rows"), ans["b"].get("rows")), ans["a"].get("checksum", "-"),
              ans["b"].get("checksum", "-"), _changed(plan.get("changed")), _changed(plan.get("pipeline_changed")),
              key=("data-query", row.name))
    blocks.append(t)
    data = checks.get("data")
    if data is not None:
        blocks.append(Text(f"data built on each side: {'equal' if data['equal'] else 'DIFFERENT'} "
                           f"({data['sql']}: A {data['a']}, B {data['b']})"))
    blocks += _answer_details(doc, answers) + _plan_details(doc, plans)
    changed = (checks.get("settings") or {}).get("changed_defaults") or []
    if changed:
        mentioned = [s for s in changed if s["mentioned_by"]]
        blocks.append(Heading(f"Settings whose default changed ({len(changed)}; {len(mentioned)} mentioned by the "
                              "workload, listed first)"))
        st = Table(SETTING_COLUMNS)
        for s in sorted(changed, key=lambda s: (not s["mentioned_by"], s["name"])):
            if full or s["mentioned_by"]:
                st.add(s["name"], s["a"], s["b"], ", ".join(s["mentioned_by"]) or "-")
        if st.rows:
            blocks.append(st)
        if not full:
            blocks.append(Text(f"{len(changed) - len(mentioned)} more changed defaults the workload does not "
                               "mention: in the results file (checks.settings) and the HTML report"))
    return blocks


def _answer_details(doc: ComparisonDoc, answers: dict[str, Any]) -> list[Block]:
    out: list[Block] = []
    for row in doc.queries:
        ans = answers.get(row.name)
        if ans is None or ans["equal"] is not False:
            continue
        a, b = ans["a"], ans["b"]
        blocks: list[Block] = [Text(row.reasoning or "")]
        if a.get("types") != b.get("types"):
            blocks.append(Text(f"types A: {', '.join(a.get('types') or [])}; B: {', '.join(b.get('types') or [])}"))
        diff = differing_rows(a, b)
        if diff is not None:
            only = Table([Column("rows only in A", "code"), Column("rows only in B", "code")], filterable=False)
            only.add("\n".join("\t".join(r) for r in diff[0]) or "-", "\n".join("\t".join(r) for r in diff[1]) or "-")
            blocks.append(only)
        out.append(Details(f"{row.name} — answer changed", blocks, style="answer changed"))
    return out


def _plan_details(doc: ComparisonDoc, plans: dict[str, Any]) -> list[Block]:
    out: list[Block] = []
    for row in doc.queries:
        plan = plans.get(row.name)
        if not plan or not (plan.get("changed") or row.verdict in ("slower", "answer changed")):
            continue
        t = Table([Column("plan A", "code"), Column("plan B", "code")], filterable=False)
        t.add(*(plan[s].get("plan", plan[s].get("plan_error", "-")) for s in ("a", "b")))
        t.add(plan["a"].get("pipeline", "-"), plan["b"].get("pipeline", "-"))
        word = "plan changed" if plan.get("changed") else "plan unchanged"
        out.append(Details(f"{row.name} ({row.verdict}) — {word}", [t]))
    return out
