"""Reading SQL text without parsing it: comments and strings masked (same length, so
positions stay valid) and the offsets of top-level ``;`` — what the workload formats and
the FORMAT handling need, and no more."""

from __future__ import annotations

import re

from chbench.errors import UsageError

STATEMENT_START = re.compile(
    r"^\s*(select|with|insert|create|drop|alter|show|explain|describe|desc|optimize|system|truncate|"
    r"set|kill|rename|exists|check|detach|attach|grant|revoke|use|\()\b",
    re.IGNORECASE,
)


def strip_comments_and_strings(sql: str, keep_strings: bool = True, keep_identifiers: bool = False) -> str:
    """Same length as ``sql``, with comments (and, unless keep_strings, string
    contents) blanked out, so positions found in the result are valid in ``sql``;
    ``keep_identifiers``: quoted names (backticks, double quotes) stay as written."""
    return "".join(scan(sql, keep_strings, keep_identifiers)[0])


def scan(sql: str, keep_strings: bool, keep_identifiers: bool = False) -> tuple[list[str], list[int]]:
    """Mask comments/strings; return the masked chars and the offsets of top-level ';'."""
    out: list[str] = []
    semis: list[int] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i) or c == "#" and (i == 0 or sql[i - 1] == "\n"):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.extend(" " * (j - i))
            i = j
        elif c == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise UsageError(f"unterminated /* comment starting at line {sql.count(chr(10), 0, i) + 1}")
            out.extend(ch if ch == "\n" else " " for ch in sql[i : j + 2])
            i = j + 2
        elif c in "'\"`":
            j = i + 1
            while True:
                if j >= n:
                    raise UsageError(
                        f"unterminated {c} quote starting at line {sql.count(chr(10), 0, i) + 1}"
                    )
                if sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote
                        j += 2
                        continue
                    break
                j += 1
            chunk = sql[i : j + 1]
            out.extend(chunk if keep_strings or (keep_identifiers and c != "'") else c + " " * (len(chunk) - 2) + c)
            i = j + 1
        else:
            if c == ";":
                semis.append(i)
            out.append(c)
            i += 1
    return out, semis


# -- the tables a statement names (a performance test's data sets) ----------------------
_TOKEN = re.compile(r"`[^`]*`|\"[^\"]*\"|[A-Za-z_][A-Za-z_0-9]*|[().,]")
_CREATE = re.compile(
    r"^\s*create\s+(?:or\s+replace\s+)?(?:temporary\s+)?(table|view|materialized\s+view|live\s+view|dictionary|"
    r"database)\s+(?:if\s+not\s+exists\s+)?((?:`[^`]*`|\"[^\"]*\"|[A-Za-z_]\w*)(?:\.(?:`[^`]*`|\"[^\"]*\"|"
    r"[A-Za-z_]\w*))?)", re.IGNORECASE)
_NOT_A_TABLE = {"select", "with", "function", "table", "values", "format", "settings", "final"}


def _tokens(sql: str) -> list[str]:
    """Identifiers (quoted ones as written), parentheses, dots and commas of ``sql`` with
    its comments and string literals masked."""
    masked = strip_comments_and_strings(sql, keep_strings=False)
    return [sql[m.start():m.end()] for m in _TOKEN.finditer(masked)]


def created_objects(sql: str) -> tuple[str, str] | None:
    """(kind, name) of what a CREATE statement creates (kind: table, view, …, database)."""
    m = _CREATE.match(strip_comments_and_strings(sql, keep_strings=True))
    return (" ".join(m.group(1).lower().split()), m.group(2)) if m else None


def tables_named(sql: str) -> list[str]:
    """The tables a statement reads or writes, as written (``db.t`` or ``t``): names after
    FROM, JOIN and INTO at the level of a query or subquery — not inside a function's
    parentheses (``extract(DAY FROM d)``), not table functions (``numbers(10)``), not
    ARRAY JOIN, not names the statement itself defines with ``WITH name AS (…)``.
    Found without a parser: what it misses, the server reports when the query runs."""
    toks = _tokens(sql)
    low = [t.lower() for t in toks]
    ctes = {toks[i] for i in range(len(toks) - 3) if low[i + 1] == "as" and toks[i + 2] == "(" and
            low[i + 3] in ("select", "with")}
    stack: list[bool] = []  # per open parenthesis: does it hold a query?
    names: list[str] = []
    for i, t in enumerate(low):
        if t == "(":
            stack.append(i + 1 < len(low) and low[i + 1] in ("select", "with"))
        elif t == ")":
            if stack:
                stack.pop()
        elif t in ("from", "join", "into") and (not stack or stack[-1]):
            if t == "join" and i > 0 and low[i - 1] == "array":
                continue
            j = i + 1
            if t == "into" and j < len(low) and low[j] == "table":
                j += 1
            if j >= len(toks) or low[j] in _NOT_A_TABLE or not (toks[j][0].isalpha() or toks[j][0] in "_`\""):
                continue
            name, j = toks[j], j + 1
            if j + 1 < len(toks) and toks[j] == ".":
                name, j = f"{name}.{toks[j + 1]}", j + 2
            if j < len(toks) and toks[j] == "(":
                continue  # a table function
            if name not in ctes and name not in names:
                names.append(name)
    return names
