"""A run of N sides (``chbench run --target A --target B --target C …``, ``chbench
trend``), compared: the baseline against every other side, then each adjacent pair not
already compared (``plan.compared_pairs``), each pair exactly as a two-sided file is
(paired rounds, its checks), with false alarms controlled across all of them.

The control: each of the m comparisons runs its own correction across queries (Holm by
default) at level alpha / m, so the chance of any false alarm in the whole run stays
under alpha (Bonferroni over comparisons, the correction within each). With two sides m
is 1: exactly the two-sided comparison."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from chbench.compare.build import CompareOptions, Comparison, build_comparison, load_sides
from chbench.compare.sides import not_reached
from chbench.errors import UsageError
from chbench.plan import compared_pairs


@dataclass
class NWayComparison:
    labels: list[str]  # every side, in the file's order
    baseline: int
    pairs: list[tuple[int, int]]
    comparisons: list[Comparison]
    alpha: float  # the family's level (each comparison ran at alpha / family)
    family: int = 0  # how many comparisons share alpha (0: all of them)

    def kind(self, pair: tuple[int, int]) -> str:
        return "baseline" if self.baseline in pair and pair[0] == self.baseline else "adjacent"

    def failing(self, fail_on: str = "slower") -> int:
        """Queries with a failing verdict over every comparison (compare's exit code)."""
        n = 0
        for c in self.comparisons:
            v = c.doc.summary.verdicts
            n += v.get("slower", 0) + v.get("answer changed", 0) + v.get("fails on B only", 0)
            n += v.get("unstable", 0) if fail_on == "unstable" else 0
            n += 1 if c.doc.summary.shift and c.doc.summary.shift.finding == "slower" else 0
            n += len(not_reached(c.doc.queries))  # a gate does not pass on queries nobody measured
        return n

    def not_reached(self) -> list[str]:
        """The queries a run stopped before, in any comparison."""
        return list(dict.fromkeys(n for c in self.comparisons for n in not_reached(c.doc.queries)))

    def to_json(self) -> dict[str, Any]:
        return {"sides": self.labels, "baseline": self.labels[self.baseline], "alpha": self.alpha,
                "correction": f"each comparison at alpha / {self.family or len(self.pairs)}, its own correction "
                              "across queries",
                "comparisons": [{"a": self.labels[i], "b": self.labels[j], "kind": self.kind((i, j)),
                                 **c.doc.to_json()} for (i, j), c in zip(self.pairs, self.comparisons, strict=True)]}


def side_index(labels: list[str], spec: str) -> int:
    """``--baseline``: a side's id (A, B, …), its position (1, 2, …) or a part of its label."""
    ids = [lab.split(":", 1)[0].strip() for lab in labels]
    if spec.upper() in ids:
        return ids.index(spec.upper())
    if spec.isdigit() and 1 <= int(spec) <= len(labels):
        return int(spec) - 1
    hits = [i for i, lab in enumerate(labels) if spec in lab]
    if len(hits) == 1:
        return hits[0]
    raise UsageError(f"--baseline {spec}: not one of the sides ({', '.join(labels)})")


def build_nway(path: str, opts: CompareOptions | None = None, baseline: str | None = None,
               pairs: list[tuple[int, int]] | None = None, family: int | None = None) -> NWayComparison:
    """``pairs`` (default ``plan.compared_pairs``) each at alpha / ``family`` (default: as
    many as the pairs). ``chbench trend`` takes its steps from the adjacent pairs alone,
    so they are its family; its baseline pairs give the series' intervals."""
    opts = opts or CompareOptions()
    one = load_sides(path, opts.metric)
    labels = [s.label for s in one.sides]
    if len(labels) < 2:
        raise UsageError(f"{path} holds one side only: give two results files to compare")
    base = side_index(labels, baseline) if baseline else 0
    if pairs is None:
        pairs = [(int(a), int(b)) for a, b in compared_pairs([str(i) for i in range(len(labels))], base)]
    family = family or len(pairs)
    each = replace(opts, alpha=opts.alpha / family)
    comparisons = [build_comparison([path], each, pair=p, opened=one) for p in pairs]
    return NWayComparison(labels, base, pairs, comparisons, opts.alpha, family)
