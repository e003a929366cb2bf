"""The ``trend`` object of a run over N versions (``chbench trend``): per query the series
— each version against the first, paired rounds, with its interval — and the *steps*:
where a query changed between two adjacent versions, by speed (the adjacent
comparison's verdict is slower or faster), answer (checksums or column types differ) or
plan (EXPLAIN PLAN's steps differ). Every comparison is ``compare/nway.py``'s; the steps
come from the n − 1 adjacent ones, with false alarms controlled across them (alpha /
(n − 1) each, Holm across queries within each); the series' intervals from the first
version against each other.

A version the run could not measure (its side failed) has no point in the series, and
no step is claimed across it."""

from __future__ import annotations

from typing import Any

from chbench.compare.build import Comparison
from chbench.compare.nway import NWayComparison
from chbench.stats.paired import rounds_to_show_a_change
from chbench.stats.verdict import FASTER, SLOWER

STEP_KINDS = ("answer", "speed", "plan")


def trend_object(nway: NWayComparison, versions: list[str]) -> dict[str, Any]:
    """``{"versions", "baseline", "queries": [{"name", "series": […]}], "steps": […]}``."""
    by_pair = dict(zip(nway.pairs, nway.comparisons, strict=True))
    base = nway.comparisons[0]
    names = [r.name for r in base.doc.queries]
    queries = []
    for name in names:
        queries.append({"name": name, "series": _series(name, by_pair, nway.baseline, len(versions), versions)})
    steps = []
    for i in range(len(versions) - 1):
        cmp = by_pair.get((i, i + 1)) or by_pair.get((i + 1, i))
        if cmp is not None:
            steps += _steps(cmp, versions[i], versions[i + 1], flipped=(i, i + 1) not in by_pair)
    steps.sort(key=lambda s: (names.index(s["query"]) if s["query"] in names else len(names),
                              versions.index(s["to"]), STEP_KINDS.index(s["kind"])))
    family = nway.family or len(nway.pairs)
    out = {"versions": versions, "baseline": versions[nway.baseline], "alpha": nway.alpha, "comparisons": family,
           "queries": queries, "steps": steps}
    need = rounds_to_show_a_change(family * len(names), nway.alpha)
    # (a query that failed on a side has no rounds for want of answers, not of time)
    rounds = min((n for c in nway.comparisons for r in c.doc.queries if r.paired or (r.a and r.b)
                  if (n := _rounds(r)) > 0), default=None)
    if rounds is not None and rounds < need:
        out["note"] = (f"some queries have {rounds} paired rounds: with false alarms controlled over {family} "
                       f"adjacent comparisons × {len(names)} queries, a speed step needs at least {need} (the "
                       "signed-rank test's smallest p-value): give it more (--iterations, or --max-time-per-query "
                       "when adaptive: a slow query's time budget ends its rounds first)")
    return out


def _rounds(r: Any) -> int:
    """A query's paired rounds (or, judged unpaired for too few, its fewer runs)."""
    return int(r.paired.pairs) if r.paired else min(int(r.a.runs), int(r.b.runs))


def _series(name: str, by_pair: dict[tuple[int, int], Comparison], base: int, n: int,
            versions: list[str]) -> list[dict[str, Any]]:
    out = []
    for j in range(n):
        if j == base:
            cmp = by_pair.get((base, base + 1)) or by_pair.get((base, base - 1))
            row = _row(cmp, name) if cmp else None
            median = row.a.median if row is not None and row.a is not None else None
            out.append({"version": versions[j], "ratio": 1.0, "ci": [1.0, 1.0], "median_ms": median,
                        "verdict": "baseline"})
            continue
        cmp = by_pair.get((base, j))
        row = _row(cmp, name) if cmp else None
        if row is None or row.ratio is None:
            out.append({"version": versions[j], "ratio": None, "ci": None, "median_ms": None,
                        "verdict": row.verdict if row is not None else "missing"})
            continue
        out.append({"version": versions[j], "ratio": row.ratio, "ci": _finite(row.ci),
                    "median_ms": row.b.median if row.b is not None else None, "verdict": row.verdict})
    return out


def _finite(ci: tuple[float, float] | None) -> list[float] | None:
    """An interval as the file keeps it: None where it is unbounded (too few rounds)."""
    import math

    return [float(ci[0]), float(ci[1])] if ci and all(math.isfinite(x) and x > 0 for x in ci) else None


def _row(cmp: Comparison, name: str) -> Any:
    inverse = {v: k for k, v in cmp.rename.items()}
    return next((r for r in cmp.doc.queries if r.name in (name, inverse.get(name))), None)


def _steps(cmp: Comparison, old: str, new: str, flipped: bool) -> list[dict[str, Any]]:
    """What changed between two adjacent versions, query by query."""
    out: list[dict[str, Any]] = []
    for r in cmp.doc.queries:
        head = {"query": r.name, "from": old, "to": new}
        verdict = r.speed_verdict or r.verdict
        if verdict in (SLOWER, FASTER) and r.ratio is not None:
            ratio, ci = r.ratio, _finite(r.ci)
            if flipped:  # measured new → old: turned around
                ratio, ci = 1 / ratio, [1 / ci[1], 1 / ci[0]] if ci else None
                verdict = FASTER if verdict == SLOWER else SLOWER
            out.append({**head, "kind": "speed", "verdict": verdict, "ratio": ratio, "ci": ci,
                        "p_adjusted": r.p_adjusted})
        if r.answers is not None and r.answers.get("equal") is False:
            out.append({**head, "kind": "answer", "why": r.reasoning})
        if r.plan_changed:
            out.append({**head, "kind": "plan"})
    return out


def largest_speed_step(trend: dict[str, Any], query: str) -> dict[str, Any] | None:
    """The query's speed step with the largest change (bench/bisect_bars.py checks that
    bisect named it)."""
    import math

    steps = [s for s in trend["steps"] if s["query"] == query and s["kind"] == "speed"]
    return max(steps, key=lambda s: abs(math.log(s["ratio"])), default=None)
