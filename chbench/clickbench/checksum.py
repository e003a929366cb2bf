"""Result checksums that are independent of row order — and of how ties are broken.

Every try's result is reduced to ``rows`` (its row count) and a 64-bit ``checksum``:
the sum, modulo 2**64, of a hash of each row's canonical text. Sums do not depend on
row order and count duplicates. Floats are folded to 9 significant digits first, so
the last bits of an ``avg()`` summed in another order do not matter.

A ``LIMIT`` without a total order is where a result can change for no fault of the
engine: rows tied on the sort key at the edge of the window are picked arbitrarily.
So the query text is read once (:func:`analyse`) and each query gets a mode:

``set``
    No ``LIMIT``, or an ``ORDER BY`` that decides every output value (all of the
    output columns are sort keys, or tied rows print identically): the whole result
    is checked.
``ties``
    ``LIMIT`` with sort keys that are output columns (``ORDER BY c DESC LIMIT 10``):
    rows whose key equals the key at an edge of the window (the last row when the
    window is full, the first when there is an ``OFFSET``) contribute their key only.
    Whatever the engine picked among the tied rows, the checksum is the same, and any
    other difference is real.
``order-sensitive``
    ``LIMIT`` with no ``ORDER BY``, or sorted by something the result does not show
    (``ORDER BY EventTime`` selecting ``SearchPhrase``): ties cannot be seen, so a
    difference may be legitimate. These queries are marked, their differences listed
    but not counted as failures.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from chbench.targets.result import Result

MASK = (1 << 64) - 1
FLOAT_DIGITS = 9

_LIMIT = re.compile(r"\bLIMIT\s+(\d+)(?:\s*,\s*(\d+))?(?:\s+OFFSET\s+(\d+))?\s*;?\s*$", re.I | re.S)


@dataclass
class Shape:
    """What matters in a query's text for checking its result."""

    select: list[tuple[str, str | None]]  # (expression, alias) per output column
    order_by: list[str] = field(default_factory=list)  # expressions, without ASC/DESC
    limit: int | None = None
    offset: int = 0


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside parentheses and quotes."""
    out, depth, quote, cur = [], 0, "", []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch == "(":
            depth += 1
            cur.append(ch)
        elif ch == ")":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _top_level_keyword(text: str, keyword: str) -> int:
    """Index of ``keyword`` (a regex) at parenthesis depth 0 outside quotes, or -1."""
    depth, quote = 0, ""
    pattern = re.compile(r"\b" + keyword + r"\b", re.I)
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and pattern.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            return i
    return -1


def analyse(sql: str) -> Shape:
    text = sql.strip().rstrip(";").strip()
    limit = offset = None
    m = _LIMIT.search(text)
    if m:
        if m.group(2) is not None:  # LIMIT offset, count
            offset, limit = int(m.group(1)), int(m.group(2))
        else:
            limit, offset = int(m.group(1)), int(m.group(3) or 0)
        text = text[: m.start()].strip()
    order_by: list[str] = []
    at = _top_level_keyword(text, r"ORDER\s+BY")
    if at >= 0:
        clause = re.sub(r"^ORDER\s+BY\s+", "", text[at:], flags=re.I)
        order_by = [re.sub(r"\s+(ASC|DESC)$", "", e.strip(), flags=re.I) for e in _split_top(clause)]
        text = text[:at]
    start = re.match(r"\s*SELECT\s+", text, re.I)
    frm = _top_level_keyword(text, "FROM")
    items = _split_top(text[start.end() if start else 0 : frm if frm >= 0 else len(text)])
    select: list[tuple[str, str | None]] = []
    for item in items:
        am = re.match(r"^(.*\S)\s+AS\s+([A-Za-z_][A-Za-z0-9_]*)$", item, re.S | re.I)
        select.append((am.group(1), am.group(2)) if am else (item, None))
    return Shape(select=select, order_by=order_by, limit=limit, offset=offset or 0)


def _norm(expr: str) -> str:
    return re.sub(r"\s+", "", expr).lower()


def key_positions(shape: Shape, names: list[str]) -> list[int] | None:
    """Output column positions of the ORDER BY expressions (None if one is not shown)."""
    out: list[int] = []
    for key in shape.order_by:
        k = _norm(key)
        pos = None
        for i, (expr, alias) in enumerate(shape.select):
            if (alias and alias.lower() == k) or _norm(expr) == k:
                pos = i
                break
        if pos is None:  # e.g. SELECT *: match by the result's column names
            lowered = [_norm(n) for n in names]
            pos = lowered.index(k) if k in lowered else None
        if pos is None:
            return None
        out.append(pos)
    return out


def mode(shape: Shape, names: list[str]) -> str:
    if shape.limit is None:
        return "set"
    if not shape.order_by:
        return "order-sensitive"
    pos = key_positions(shape, names)
    if pos is None:
        # sorted by something not shown: still decided if every output column is among
        # the last sort keys (ORDER BY EventTime, SearchPhrase selecting SearchPhrase):
        # rows equal on the whole sort key then print identically
        shown = {_norm(a or e) for e, a in shape.select}
        tail = {_norm(k) for k in shape.order_by[len(shape.order_by) - len(shape.select):]}
        if len(shape.order_by) > len(shape.select) and tail == shown:
            return "set"
        return "order-sensitive"
    if set(pos) == set(range(len(shape.select))) and "*" not in (e for e, _ in shape.select):
        return "set"
    return "ties"


def fold(value: str, type_name: str) -> str:
    """The canonical text of one value: floats to FLOAT_DIGITS significant digits."""
    if "Float" in type_name and value not in ("\\N", "NULL"):
        try:
            f = float(value)
        except ValueError:
            return value
        if f != f or f in (float("inf"), float("-inf")):
            return value.lower()
        if f == 0.0:
            return "0"
        return format(f, f".{FLOAT_DIGITS}g")
    return value


def _row_hash(parts: list[str]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "little")


def checksum(result: Result, shape: Shape) -> dict[str, object]:
    """{"rows", "checksum" (16 hex digits), "mode"} for one result."""
    md = mode(shape, result.names)
    rows = [[fold(v, t) for v, t in zip(r, result.types, strict=False)] for r in result.rows]
    edges: set[tuple[str, ...]] = set()
    pos = key_positions(shape, result.names) if md == "ties" else None
    if pos is not None and rows:
        if shape.offset > 0:
            edges.add(tuple(rows[0][p] for p in pos))
        if shape.limit is not None and len(rows) >= shape.limit:
            edges.add(tuple(rows[-1][p] for p in pos))
    total = 0
    for r in rows:
        if pos is not None:
            key = tuple(r[p] for p in pos)
            if key in edges:
                total += _row_hash(["<tie>", *key])
                continue
        total += _row_hash(r)
    return {"rows": len(rows), "checksum": f"{total & MASK:016x}", "mode": md}
