"""A query of a workload, its stable name and the SQL actually sent."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from chbench.workload.sqlfile import strip_comments_and_strings


@dataclass
class Query:
    name: str
    sql: str
    weight: int = 1  # share of a load mix (chbench load); run ignores it


_RESULT_KEYWORDS = ("select", "with", "(", "show", "explain", "describe", "desc", "exists")
_TRAILING_FORMAT = re.compile(r"\bFORMAT\s+[A-Za-z0-9_]+\s*$", re.IGNORECASE)


def query_name(sql: str) -> str:
    """A stable short name for an unnamed query: first words plus a hash of the SQL."""
    norm = " ".join(strip_comments_and_strings(sql, keep_strings=True).split())
    words = re.findall(r"[A-Za-z0-9_]+", norm.lower())[:6]
    digest = hashlib.sha1(norm.encode()).hexdigest()[:6]
    return "-".join(words + [digest])


def returns_rows(sql: str) -> bool:
    head = strip_comments_and_strings(sql, keep_strings=True).lstrip().lower()
    return head.startswith(_RESULT_KEYWORDS)


def prepare_sql(sql: str, keep_format: bool = False) -> str:
    """The SQL to send: trailing ``;`` removed, any trailing FORMAT clause replaced
    by ``FORMAT Null`` (measure the engine, not serialization) unless keep_format."""
    body = sql.strip().rstrip(";").rstrip()
    if keep_format or not returns_rows(body):
        return body
    masked = strip_comments_and_strings(body, keep_strings=False)
    # strip trailing comments so the appended clause is not commented out
    body = body[: len(masked.rstrip())] if len(masked) == len(body) else body
    m = _TRAILING_FORMAT.search(strip_comments_and_strings(body, keep_strings=False))
    if m:
        body = body[: m.start()].rstrip()
    return body + "\nFORMAT Null"
