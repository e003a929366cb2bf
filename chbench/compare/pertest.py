"""Performance tests in a comparison: each query's threshold from its test (the author's
``max_ignored_relative_change``), and one row per test — how many of its queries were
faster, slower, unstable, unchanged, skipped or failed, and the geometric mean of their
ratios."""

from __future__ import annotations

import math
from typing import Any

from chbench.compare.document import TestRow
from chbench.compare.sides import Side
from chbench.stats.verdict import QueryComparison, finite_ratio

ORDER = ("slower", "faster", "unstable", "no change", "answer changed", "fails on B only", "failed", "skipped",
         "only in A", "only in B")


def test_of_queries(a: Side, b: Side, rename: dict[str, str]) -> dict[str, str]:
    """Each query's test, under A's names (A's tests over B's)."""
    return {**{rename.get(n, n): t for n, t in b.test_of.items()}, **a.test_of}


def thresholds_of(test_of: dict[str, str], tests: list[dict[str, Any]]) -> dict[str, float]:
    """Per query, its test's threshold, where the test set one."""
    by_test = {t["name"]: float(t["threshold"]) for t in tests if t.get("threshold") is not None}
    return {n: by_test[t] for n, t in test_of.items() if t in by_test}


def per_test(rows: list[QueryComparison], test_of: dict[str, str], tests: list[dict[str, Any]]) -> list[TestRow]:
    """One row per test, in run order (tests skipped or unreadable included)."""
    out: dict[str, TestRow] = {}
    for t in tests:
        out[t["name"]] = TestRow(t["name"], file=t.get("file"), threshold=t.get("threshold"))
        why = t.get("error") or t.get("skipped") or t.get("failed")
        if isinstance(why, dict):
            per_side = {sid: v if isinstance(v, str) else f"set-up failed: {v.get('element', '')}"
                        for sid, v in why.items()}
            same = len(set(per_side.values())) == 1 and len(per_side) > 1
            why = next(iter(per_side.values())) if same else "; ".join(f"{k}: {v}" for k, v in per_side.items())
        if why:
            out[t["name"]].note = str(why)
    logs: dict[str, list[float]] = {}
    for r in rows:
        name = test_of.get(r.name)
        if name is None:
            continue
        row = out.setdefault(name, TestRow(name))
        row.queries += 1
        row.verdicts[r.verdict] = row.verdicts.get(r.verdict, 0) + 1
        ratio = finite_ratio(r)
        if r.tested and ratio is not None:
            logs.setdefault(name, []).append(math.log(ratio))
    for name, values in logs.items():
        out[name].geomean = math.exp(sum(values) / len(values))
    for row in out.values():
        row.verdicts = {k: row.verdicts[k] for k in sorted(row.verdicts, key=_rank)}
    return list(out.values())


def _rank(verdict: str) -> int:
    return ORDER.index(verdict) if verdict in ORDER else len(ORDER)
