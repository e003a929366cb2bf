"""A side-by-side file's answer and plan checks (``chbench upgrade``, ``upgrade/checks.py``)
joined to the comparison: per query ``answers`` (``{"a": {"rows", "checksum"}, "b": …,
"equal"}``) and ``plan_changed``; a differing answer is the query's verdict (``answer
changed``, its speed verdict kept as ``speed_verdict``) and such queries are listed first."""

from __future__ import annotations

from typing import Any

from chbench.compare.document import ComparisonDoc
from chbench.stats.verdict import ANSWER_CHANGED, FAILS_ON_B

FIRST = (ANSWER_CHANGED, FAILS_ON_B)  # listed before every other verdict


def _short(ans: dict[str, Any]) -> dict[str, Any]:
    if "error" in ans:
        return {"error": ans["error"]}
    return {"rows": ans["rows"], "checksum": ans["checksum"], "types": ans.get("types"),
            "stable": ans.get("stable", True)}


def apply_checks(doc: ComparisonDoc, checks: dict[str, Any]) -> None:
    """Answers, plan changes and changed setting defaults into the comparison document."""
    answers, plans = checks.get("answers") or {}, checks.get("plans") or {}
    for row in doc.queries:
        ans = answers.get(row.name)
        if ans is not None:
            row.answers = {"a": _short(ans["a"]), "b": _short(ans["b"]), "equal": ans["equal"]}
            if ans["equal"] is False:
                row.speed_verdict = row.verdict
                row.verdict = ANSWER_CHANGED
                row.reasoning = row.reason = _answer_why(ans["a"], ans["b"])
            elif ans["equal"] is None and "error" not in ans["a"] and "error" not in ans["b"]:
                row.flags.append("LIMIT without a total order: answers not compared"
                                 if ans["a"].get("stable", True) and ans["b"].get("stable", True)
                                 else "answer varies between runs on one version: not compared")
        plan = plans.get(row.name)
        if plan is not None:
            row.plan_changed = bool(plan["changed"])
            row.pipeline_changed = plan.get("pipeline_changed")
            if plan["changed"]:
                row.flags.append("plan changed")
    doc.queries.sort(key=lambda r: FIRST.index(r.verdict) if r.verdict in FIRST else len(FIRST))
    doc.result.recount()
    doc.summary.answers_changed = doc.summary.verdicts.get(ANSWER_CHANGED, 0)
    doc.summary.plans_changed = sum(1 for r in doc.queries if r.plan_changed)
    doc.settings_changed = (checks.get("settings") or {}).get("changed_defaults", [])
    data = checks.get("data")
    if data is not None:
        doc.data_check = data
        if not data["equal"]:
            doc.notes.append(
                f"the two sides built different data ({data['sql']}: A {data['a']} vs B {data['b']}): answers "
                "and timings compare different tables")


def _answer_why(a: dict[str, Any], b: dict[str, Any]) -> str:
    if a.get("types") != b.get("types"):
        return f"column types differ: A {', '.join(a.get('types') or [])} vs B {', '.join(b.get('types') or [])}"
    if a["rows"] != b["rows"]:
        return f"row count differs: A {a['rows']} vs B {b['rows']}"
    return f"same {a['rows']} rows, different values (checksum {a['checksum']} vs {b['checksum']})"


def differing_rows(a: dict[str, Any], b: dict[str, Any], limit: int = 10) -> tuple[list[Any], list[Any]] | None:
    """Rows only in A and only in B, for small results whose rows were kept."""
    if "sample" not in a or "sample" not in b:
        return None
    ra = [tuple(r) for r in a["sample"]]
    rb = [tuple(r) for r in b["sample"]]
    only_a = [list(r) for r in ra if r not in rb][:limit]
    only_b = [list(r) for r in rb if r not in ra][:limit]
    return only_a, only_b
