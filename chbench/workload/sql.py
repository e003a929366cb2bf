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


def strip_comments_and_strings(sql: str, keep_strings: bool = True) -> str:
    """Same length as ``sql``, with comments (and, unless keep_strings, string
    contents) blanked out, so positions found in the result are valid in ``sql``."""
    return "".join(scan(sql, keep_strings)[0])


def scan(sql: str, keep_strings: bool) -> tuple[list[str], list[int]]:
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
            out.extend(chunk if keep_strings else c + " " * (len(chunk) - 2) + c)
            i = j + 1
        else:
            if c == ";":
                semis.append(i)
            out.append(c)
            i += 1
    return out, semis
