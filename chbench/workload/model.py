"""What is run: a workload of named queries with its set-up and tear-down, and the SQL
actually sent for each query."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from chbench.workload.sql import strip_comments_and_strings


@dataclass
class Query:
    name: str
    sql: str
    weight: int = 1  # share of a load mix (chbench load); run ignores it
    settings: dict[str, str] = field(default_factory=dict)  # this query's own settings (over the workload's)
    group: str | None = None  # the group (a performance test) it belongs to
    tables: list[str] = field(default_factory=list)  # tables it reads that its group does not create


@dataclass
class Statement:
    """An untimed statement of a group, and the element it came from (for error lines)."""

    sql: str
    origin: str  # e.g. "<fill_query> #2"


@dataclass
class Group:
    """Queries that run together between a set-up and a tear-down of their own: one
    ClickHouse performance test (``formats/perftest.py``).

    The runner takes groups one after another: ``cleanup`` (errors ignored), ``setup``,
    the group's queries in rounds, ``teardown`` — each with the group's ``settings``.
    A group whose ``skip`` is set runs nothing (its queries are recorded as skipped);
    ``error`` marks a group that could not be read at all (bad input)."""

    name: str
    source: str
    queries: list[str] = field(default_factory=list)  # names, in order
    setup: list[Statement] = field(default_factory=list)
    teardown: list[Statement] = field(default_factory=list)
    cleanup: list[Statement] = field(default_factory=list)  # before set-up, errors ignored
    settings: dict[str, str] = field(default_factory=dict)
    threshold: float | None = None  # the smallest change the test's author wants reported
    requires: list[str] = field(default_factory=list)  # tables that must exist (preconditions)
    tables: list[str] = field(default_factory=list)  # tables its set-up reads and does not create
    tags: list[str] = field(default_factory=list)
    skip: str | None = None
    error: str | None = None
    expanded: int = 0  # queries its templates expand to (before --max-queries)
    not_chosen: list[str] = field(default_factory=list)  # left out by --max-queries

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "file": self.source, "queries": list(self.queries),
                                  "expanded": self.expanded, "settings": dict(self.settings),
                                  "threshold": self.threshold, "tags": list(self.tags)}
        if self.not_chosen:
            out["not_chosen"] = list(self.not_chosen)
        if self.skip:
            out["skipped"] = self.skip
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Workload:
    """The measured queries, and statements that run once per side before and after them.

    Set-up and tear-down are not timed and may write even when the run is read-only
    (creating and filling a test's own tables is what they are for); a failing set-up
    statement fails its side. ``settings`` apply to every statement of the workload,
    set-up included; ``source`` says where the workload came from."""

    queries: list[Query]
    setup: list[str] = field(default_factory=list)
    teardown: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    source: str = ""
    groups: list[Group] = field(default_factory=list)  # empty: the queries are one group

    def query(self, name: str) -> Query | None:
        for q in self.queries:
            if q.name == name:
                return q
        return None

    def names(self) -> list[str]:
        return [q.name for q in self.queries]

    def describe(self) -> dict[str, object]:
        """For results files: where it came from and what runs around the queries."""
        out: dict[str, object] = {"source": self.source, "queries": len(self.queries), "setup": list(self.setup),
                                  "teardown": list(self.teardown), "settings": dict(self.settings)}
        if self.groups:
            out["tests"] = len(self.groups)
        return out

    def group(self, name: str) -> Group | None:
        return next((g for g in self.groups if g.name == name), None)


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
