"""The two judges of ``chbench bisect``: speed (paired rounds, three-valued, more runs until
it can tell) and answers (checksums and column types, exact).

**Speed.** A comparison of versions x and y runs the query side by side (A B / B A each
round), and judges the per-round log ratios ``log(t_y / t_x)`` by their Hodges–Lehmann
estimate and its interval (99%: ``CONF`` below; ``stats/paired.py``, as ``compare`` does
side by side):

* ``changed`` — the whole interval lies beyond ±h, where h is half the threshold
  (``--threshold 5`` → 2.5%): y surely differs from x by more than h;
* ``same`` — the whole interval lies within ±h;
* otherwise not known yet: the measurer runs as many rounds again (10, 20, 40, …), up to
  ``max_rounds`` (160); still not known → ``unknown``, leaning to the side of the estimate.

Half the threshold, not the threshold: bisect asks where a change *of the size
already seen between OLD and NEW* happened, so a version either has it or has not; with
the full threshold a change of exactly the threshold would be called "same" about half
the time.

**Answers.** Each version's answer is asked once (cached) and compared exactly: row
count, order-independent checksum and column types (``upgrade/checks.py``); a query that
starts or stops failing changed its answer, one failing on both is alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chbench.bisect.search import BisectStep, Decision
from chbench.stats.paired import Z95, hl_interval

# the decisions' interval level: 99%, since a bisect looks many times (up to five per
# comparison, eight comparisons or so): simulated with per-round noise drawn from a real
# A/A file (robust sd 8.4%), a +5% step among 64 versions was found in 35 of 40 chains at
# 95% and 80 rounds at most, in 40 of 40 at 99% and 160 (bench/bisect_bars.py)
CONF = 0.99


@dataclass
class SpeedJudge:
    """``measure(x, y, rounds)`` → that many more per-round log ratios of y against x."""

    measure: Callable[[int, int, int], list[float]]
    threshold: float = 0.05
    first_rounds: int = 10
    max_rounds: int = 160
    precision: float | None = None  # a decided comparison goes on until its interval is within ±this
    found: dict[tuple[int, int], tuple[float, float, float]] = field(default_factory=dict)  # centre, lo, hi (log)

    def compare(self, old: int, new: int) -> BisectStep:
        h = math.log1p(self.threshold / 2)
        d: list[float] = []
        rounds = self.first_rounds
        while True:
            d += self.measure(old, new, rounds)
            centre, lo, hi = hl_interval(d, CONF)
            decision = decide(lo, hi, h)
            precise = self.precision is None or (hi - lo) / 2 <= math.log1p(self.precision)
            if (decision is not Decision.UNKNOWN and precise) or len(d) >= self.max_rounds or not d:
                break
            rounds = min(len(d), self.max_rounds - len(d))  # as many again
        leaning = decision if decision is not Decision.UNKNOWN else \
            Decision.CHANGED if math.isfinite(centre) and abs(centre) >= h else Decision.SAME
        self.found[(old, new)] = (centre, lo, hi)
        detail: dict[str, Any] = {"rounds": len(d), "threshold": self.threshold}
        if math.isfinite(centre):
            detail["ratio"] = math.exp(centre)
            detail["ci"] = [math.exp(lo), math.exp(hi)] if math.isfinite(lo) and math.isfinite(hi) else None
            detail["summary"] = f"{math.expm1(centre):+.1%}" + (
                f" [{math.expm1(lo):+.1%}, {math.expm1(hi):+.1%}]" if detail["ci"] else "")
        return BisectStep(old, new, decision, leaning, detail)

    def explains(self, ref: int, k: int, end: int) -> bool | None:
        """True when ref → k surely accounts for ref → end: what is left (their
        difference, log) lies within ±h with its whole 95% interval (the standard error
        from both intervals); otherwise None — k is compared with end."""
        a, b = self.found.get((ref, k)), self.found.get((ref, end))
        if a is None or b is None or not all(math.isfinite(x) for x in (*a, *b)):
            return None
        rest = b[0] - a[0]
        z = _z(CONF)
        sd = math.hypot((a[2] - a[1]) / (2 * z), (b[2] - b[1]) / (2 * z))
        return True if abs(rest) + Z95 * sd < math.log1p(self.threshold / 2) else None


def _z(conf: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + conf / 2))


def decide(lo: float, hi: float, h: float) -> Decision:
    """Three-valued: the interval beyond ±h, within it, or neither (not known yet)."""
    if lo > h or hi < -h:
        return Decision.CHANGED
    if lo > -h and hi < h:
        return Decision.SAME
    return Decision.UNKNOWN


@dataclass
class AnswerJudge:
    """``answer(i)`` → that version's answer (``upgrade.checks.answer`` shape), asked once."""

    answer: Callable[[int], dict[str, Any]]
    cache: dict[int, dict[str, Any]] = field(default_factory=dict)

    def get(self, i: int) -> dict[str, Any]:
        if i not in self.cache:
            self.cache[i] = self.answer(i)
        return self.cache[i]

    def compare(self, old: int, new: int) -> BisectStep:
        from chbench.upgrade.checks import answers_equal

        a, b = self.get(old), self.get(new)
        if ("error" in a) != ("error" in b):
            equal: bool | None = False  # a query that starts or stops failing changed its answer
        elif "error" in a:
            equal = True  # failing on both: alike
        else:
            equal = answers_equal(a, b)
        decision = Decision.SAME if equal is True else Decision.CHANGED if equal is False else Decision.UNKNOWN
        leaning = decision if decision is not Decision.UNKNOWN else Decision.SAME
        detail = {"answers": {"old": _brief(a), "new": _brief(b)}, "summary": _answer_summary(a, b, equal)}
        return BisectStep(old, new, decision, leaning, detail)

    def explains(self, ref: int, k: int, end: int) -> bool | None:
        return self.compare(k, end).decision is Decision.SAME


def _brief(a: dict[str, Any]) -> dict[str, Any]:
    if "error" in a:
        return {"error": a["error"]}
    out = {"rows": a.get("rows"), "checksum": a.get("checksum"), "types": a.get("types")}
    if "sample" in a and len(a["sample"]) <= 5:
        out["sample"] = a["sample"]
    return out


def _error_text(error: Any) -> str:
    return str(error.get("message") or error) if isinstance(error, dict) else str(error)


def _answer_summary(a: dict[str, Any], b: dict[str, Any], equal: bool | None) -> str:
    if equal is True and "error" in a:
        return f"fails on both: {_error_text(a['error'])}"[:160]
    if equal is True:
        return "same answer"
    if "error" in a or "error" in b:
        return f"error: {_error_text((b if 'error' in b else a)['error'])}"[:160]
    if equal is None:
        return "answer varies between runs: not compared"
    if a.get("types") != b.get("types"):
        return f"column types {', '.join(a.get('types') or [])} → {', '.join(b.get('types') or [])}"
    if a.get("rows") != b.get("rows"):
        return f"rows {a.get('rows')} → {b.get('rows')}"
    sa, sb = a.get("sample"), b.get("sample")
    if sa is not None and sb is not None and len(sa) <= 3 and len(sb) <= 3:
        def show(rows: list[list[Any]]) -> str:
            return "; ".join(", ".join(str(v) for v in r) for r in rows)[:60]

        return f"{show(sa)} → {show(sb)}"
    return "different values (checksum)"
