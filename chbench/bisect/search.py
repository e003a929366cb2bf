"""The search of ``chbench bisect``: which version first changed, over an ordered range.

Pure: it asks a *judge* to compare two versions (by their index in the range) and gets
a three-valued decision back — ``changed``, ``same``, or ``unknown`` when the judge's
budget of runs ran out before it could tell (Chromium's Pinpoint works this way; ``asv
find`` and ClickHouse's auto-bisect have two values and no statistics). The judge owns
the measuring (more runs until it knows, side by side); this module owns the order of
comparisons:

1. OLD against NEW. Same → no change in the range (exit 1).
2. Halve the range against a fixed reference (OLD, at first): a version that differs
   from the reference lies at or after the change. ``log2(n)`` comparisons.
3. The step found (k−1 → k) is measured directly, adjacent versions side by side: its
   size and interval are what the report names.
4. Does that step account for the whole change from the reference to NEW? The judge
   says, from the comparisons made (no new one when it can). If not, k against NEW;
   still different → the rest of the range holds another change: the search goes on
   from k. A range with several changes reports each, never one of them at random.

A version the judge could not decide (``unknown`` after its budget) is treated by its
estimate's side and marked ``undecided`` in the steps: the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol


class Decision(str, Enum):
    CHANGED = "changed"
    SAME = "same"
    UNKNOWN = "unknown"


@dataclass
class BisectStep:
    """One comparison: version ``old`` against ``new`` (indexes into the range)."""

    old: int
    new: int
    decision: Decision
    leaning: Decision  # the decision, or for unknown the side its estimate lies on
    detail: dict[str, Any] = field(default_factory=dict)  # the judge's: ratio, ci, answers, runs, …
    why: str = ""  # what the step was for: endpoints, halving, the step found, the rest

    def to_json(self, versions: list[str]) -> dict[str, Any]:
        return {"old": versions[self.old], "new": versions[self.new], "decision": self.decision.value,
                "undecided": self.decision is Decision.UNKNOWN, "leaning": self.leaning.value, "why": self.why,
                **self.detail}


class Judge(Protocol):
    """Compares two versions of the range (indexes), measuring as long as it needs."""

    def compare(self, old: int, new: int) -> BisectStep: ...

    def explains(self, ref: int, k: int, end: int) -> bool | None:
        """Whether ref → k (both measured) accounts for all of ref → end, from the
        comparisons made; None: cannot tell without comparing k with end."""
        ...


@dataclass
class VersionChange:
    """A change found: the last version like the one before it, the first unlike."""

    last_same: int
    first_changed: int
    step: BisectStep  # the adjacent comparison last_same → first_changed
    confirmed: bool  # that adjacent comparison itself says changed

    def to_json(self, versions: list[str]) -> dict[str, Any]:
        out = {"last_same": versions[self.last_same], "first_changed": versions[self.first_changed],
               "confirmed": self.confirmed, "undecided": self.step.decision is Decision.UNKNOWN,
               **{k: v for k, v in self.step.detail.items() if k in ("ratio", "ci", "answers", "summary")}}
        ratio, threshold = self.step.detail.get("ratio"), self.step.detail.get("threshold")
        if ratio and threshold:  # found at half the threshold: is it as large as the threshold too?
            out["beyond_threshold"] = abs(ratio - 1) >= threshold
        return out


@dataclass
class BisectSearch:
    n: int
    steps: list[BisectStep] = field(default_factory=list)
    changes: list[VersionChange] = field(default_factory=list)
    found: bool = False  # OLD and NEW differ


def bisect(n: int, judge: Judge) -> BisectSearch:
    """Every change between index 0 and n−1 the comparisons can see."""
    s = BisectSearch(n)
    if n < 2:
        return s
    total = _ask(s, judge, 0, n - 1, "OLD against NEW")
    if total.leaning is not Decision.CHANGED:
        return s
    s.found = True
    ref = 0
    while True:
        k = _halve(s, judge, ref, n - 1)
        step = _ask(s, judge, k - 1, k, "the step found, adjacent versions") if k - 1 != ref else \
            next(x for x in reversed(s.steps) if (x.old, x.new) == (ref, k))
        s.changes.append(VersionChange(k - 1, k, step, step.decision is Decision.CHANGED))
        if k == n - 1:
            return s
        whole = judge.explains(ref, k, n - 1)
        if whole is True:
            return s
        rest = _ask(s, judge, k, n - 1, "does the rest of the range change too")
        if rest.leaning is not Decision.CHANGED:
            return s
        ref = k


def _halve(s: BisectSearch, judge: Judge, ref: int, end: int) -> int:
    """The first index after ``ref`` that differs from it (``end`` does)."""
    lo, hi = ref, end
    while hi - lo > 1:
        m = (lo + hi) // 2
        if _ask(s, judge, ref, m, "halving the range").leaning is Decision.CHANGED:
            hi = m
        else:
            lo = m
    return hi


def _ask(s: BisectSearch, judge: Judge, old: int, new: int, why: str) -> BisectStep:
    for made in s.steps:  # every comparison once: a cached step is not measured again
        if (made.old, made.new) == (old, new):
            return made
    step = judge.compare(old, new)
    step.why = why
    s.steps.append(step)
    return step
