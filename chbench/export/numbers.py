"""Number formatting, in one place: how every exporter (and every live view) writes a
number, a missing value, a change, an interval."""

from __future__ import annotations

import math
from typing import Any

DASH = "-"  # a value that is missing, failed or not measured


def missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def num(v: Any, fmt: str = "") -> str:
    """``v`` formatted with the format spec ``fmt`` ('.2f', ',d', …), or a dash."""
    return DASH if missing(v) else format(v, fmt)


def count(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and its noun, singular or plural: 1 query, 2 queries, 1,200 runs."""
    many = nouns or (noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s")
    return f"{n:,} {noun if n == 1 else many}"


def change(ratio: float | None) -> str:
    """A ratio B/A as a signed percent change: 1.053 → '+5.3%'."""
    if ratio is None or missing(ratio):
        return DASH
    if math.isinf(ratio):  # an interval too few runs cannot bound: '[-100.0%, +∞]'
        return "+∞"
    return f"{(ratio - 1) * 100:+.1f}%"


def interval(ci: Any) -> str:
    """A ratio interval [low, high] as percent changes: '[-1.2%, +3.4%]'."""
    if not ci or missing(ci[0]) or missing(ci[1]):
        return DASH
    return f"[{change(ci[0])}, {change(ci[1])}]"


def percent(frac: float | None, digits: int = 0) -> str:
    """A share: 0.72 → '72%'."""
    if frac is None or missing(frac):
        return DASH
    return f"{frac:.{digits}%}"


def pair(values: Any, fmt: str = "", sep: str = " / ") -> str:
    """Two numbers of one cell (A and B runs, say): '10 / 12'."""
    return sep.join(num(v, fmt) for v in values)


def part(v: Any, fmt: str) -> str:
    """One value of a cell that holds several (an interval's end, one side's runs)."""
    return change(v) if fmt == "interval" else num(v, fmt)


NAMED = {"change": change, "interval": interval, "percent": percent, "code": lambda v: str(v)}


def text(value: Any, fmt: str = "") -> str:
    """A cell's value as text: a named format ('change', 'interval', 'percent'), a
    format spec, or the value itself for text."""
    if fmt in NAMED:
        return NAMED[fmt](value)
    if isinstance(value, tuple):
        return pair(value, fmt)
    if not fmt and value is not None:
        return str(value)
    if isinstance(value, str):
        return value
    return num(value, fmt)
