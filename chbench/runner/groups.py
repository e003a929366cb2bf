"""Groups of queries with a set-up of their own — ClickHouse's performance tests — run
one after another, each on every side: checks, clean-up, set-up, its queries in rounds
(warm-up, A B / B A as for any query), tear-down.

Nothing is timed that cannot succeed. Before a test's set-up a side skips the whole test,
every query recorded with the reason, when the test is tagged long (without ``--long``),
names a setting the server does not know, or needs a table that is missing (its
``<table_exists>``, or one its set-up reads). After set-up a side skips one query whose
own tables are missing, and every side skips a query that writes while the run is
read-only. A warm-up run that fails because a table or database is missing skips the
query there too (the warm-up is not timed). A set-up statement that fails fails the test
on that side, with one line naming the file and the element; the other tests go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chbench.errors import QueryError, ServerLost
from chbench.runner.settings import group_settings, statement_settings
from chbench.workload import Statement
from chbench.workload.model import Group, returns_rows

if TYPE_CHECKING:
    from chbench.results import RunSample
    from chbench.runner.runner import QueryState, Runner
    from chbench.targets import Target

MISSING_CODES = (60, 81)  # UNKNOWN_TABLE, UNKNOWN_DATABASE: the data set is not there


def group_record(group: Group) -> dict[str, Any]:
    """The test's entry in the results document (``tests``)."""
    return {**group.describe(), "skipped": {}, "failed": {}, "teardown_errors": []}


class GroupRun:
    """One group on every side of a run."""

    def __init__(self, runner: Runner, name: str, states: list[QueryState]) -> None:
        self.r = runner
        self.states = states
        self.groups = {s.id: g for s in runner.plan.sides if (g := s.workload.group(name)) is not None}
        first = next(iter(self.groups.values()))
        known = next((t for t in runner.doc.tests if t["name"] == name), None)  # a later --sessions session
        self.record = known if known is not None else group_record(first)
        if known is None:
            runner.doc.tests.append(self.record)
        self.live: list[str] = []  # sides that run the test
        self.prepared: list[str] = []  # sides whose set-up began
        self.exists: dict[tuple[object, ...], bool] = {}  # (engine, table) -> exists

    # -- what runs where -----------------------------------------------------------------
    def _skip_side(self, sid: str, why: str) -> None:
        self.record["skipped"][sid] = why
        for st in self.states:
            if sid in st.sides:
                self.r.skip(st, sid, why)

    def _targets(self, sides: list[str] | None = None) -> list[tuple[Target, list[str]]]:
        """The live sides (or these) by the data they reach: sides on one engine (two
        targets of one in-process engine, a server twice) run the test's statements once."""
        by: dict[tuple[object, ...], tuple[Target, list[str]]] = {}
        for sid in self.live if sides is None else sides:
            t = self.r.by_id[sid].target
            by.setdefault(t.data_key(), (t, []))[1].append(sid)
        return list(by.values())

    def check(self) -> bool:
        """Before anything runs: which sides can run the test; False if none can."""
        first = next(iter(self.groups.values()))
        if first.error:
            self.record["error"] = first.error
            self.r.observer.problem(f"test {first.name}: {first.error}")
            return False
        for sid, g in self.groups.items():
            info = self.r.infos[sid]
            unknown = sorted(k for k in g.settings if not info.knows(k))
            if g.skip:
                self._skip_side(sid, g.skip)
            elif unknown:
                self._skip_side(sid, f"setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} unknown to "
                                     f"this server ({info.version})")
            elif sid not in self.r.failed_sides:
                self.live.append(sid)
        for target, sids in self._targets():
            g = self.groups[sids[0]]
            for names, what in ((g.requires, "<table_exists>"), (g.tables, "read by its set-up")):
                missing = self._missing(target, names)
                if missing:
                    for sid in sids:
                        self._skip_side(sid, f"table {missing[0]} is missing ({what})")
                        self.live.remove(sid)
                    break
        by_reason: dict[str, list[str]] = {}
        for sid, why in self.record["skipped"].items():
            by_reason.setdefault(why, []).append(sid)
        for why, sids in by_reason.items():
            self.r.observer.note(f"test {first.name}: skipped on {', '.join(sids)}: {why}")
        return bool(self.live)

    def _missing(self, target: Target, names: list[str]) -> list[str]:
        """Missing tables among these, asked once per engine and table in this test."""
        for name in names:
            key = (target.data_key(), name)
            if key not in self.exists:
                self.exists[key] = _exists(target, name)
        return [n for n in names if not self.exists[(target.data_key(), n)]]

    def settings(self, sid: str) -> dict[str, str]:
        """The side's settings with the test's on top and the user's over both (what is
        compared, e.g. --setting-b, wins), known ones only."""
        return group_settings(self.r.sent[sid], self.groups[sid].settings, self.r.by_id[sid].settings,
                              self.r.infos[sid])

    # -- set-up and tear-down --------------------------------------------------------------
    def _statements(self, which: str, on_error: Callable[[list[str], Statement, QueryError], bool]) -> None:
        for target, sids in self._targets():
            for st in getattr(self.groups[sids[0]], which):
                try:
                    target.statement(st.sql, statement_settings(self.settings(sids[0])))
                except QueryError as e:
                    if on_error(sids, st, e):
                        break

    def _drop(self, target: Target, sql: str, settings: dict[str, str]) -> None:
        """A tear-down statement; a connection broken by Ctrl-C in the middle of a query
        is opened afresh once (the tables must still go)."""
        try:
            target.statement(sql, settings)
        except ServerLost:
            target.reconnect()
            target.statement(sql, settings)

    def setup(self) -> None:
        """Clean-up (the test's drop queries, errors ignored), then create and fill."""
        self.prepared = list(self.live)  # torn down at the end, even where set-up fails
        self._statements("cleanup", lambda sids, st, e: False)
        self._statements("setup", self._setup_failed)
        self.r.writer.checkpoint(force=True)

    def _setup_failed(self, sids: list[str], st: Statement, e: QueryError) -> bool:
        g = self.groups[sids[0]]
        line = f"{g.source}: {st.origin}: {e.message}"
        for sid in sids:
            self.record["failed"][sid] = {"element": st.origin, "statement": st.sql, "error": e.as_dict()}
            self.live.remove(sid)
            for q in self.states:
                if sid in q.sides:
                    q.done[sid] = True
                    q.entry.sides[sid].failed = f"set-up of the test failed: {st.origin}"
        self.r.observer.problem(f"test {g.name}: set-up failed on {', '.join(sids)}: {line}")
        return True

    def teardown(self) -> None:
        """The drop queries on every side that began its set-up, whatever ended the test
        (Ctrl-C included); a failure is recorded, never raised over what ended it."""
        for target, sids in self._targets(self.prepared):
            for st in self.groups[sids[0]].teardown:
                try:
                    self._drop(target, st.sql, statement_settings(self.settings(sids[0])))
                except (QueryError, ServerLost) as e:
                    self.record["teardown_errors"].append(f"{', '.join(sids)}: {st.origin}: "
                                                          f"{getattr(e, 'message', None) or e}")
                    if isinstance(e, ServerLost):
                        break

    # -- queries -------------------------------------------------------------------------------
    def check_queries(self) -> None:
        """Queries that cannot run: their own tables missing on a side, writes when read-only."""
        for st in self.states:
            q = self.r.by_id[st.sides[0]].query(st.name)
            if q is not None and not self.r.plan.allow_writes and not returns_rows(q.sql):
                for sid in st.sides:
                    self.r.skip(st, sid, "writes (INSERT, OPTIMIZE, …): --allow-writes runs it")
                continue
            for target, sids in self._targets():
                q = self.r.by_id[sids[0]].query(st.name)
                missing = self._missing(target, q.tables if q else [])
                for sid in sids:
                    if missing and sid in st.sides and not st.done[sid]:
                        self.r.skip(st, sid, f"table {missing[0]} is missing")


def _exists(target: Target, name: str) -> bool:
    """Whether the table exists on the target (untimed ``EXISTS TABLE``; an error: no)."""
    try:
        rows = target.query_rows(f"EXISTS TABLE {name}")
    except QueryError:
        return False
    return bool(rows) and rows[0][0].strip() == "1"


def skip_if_missing(runner: Runner, st: QueryState, s: RunSample) -> None:
    """A warm-up run of a test's query that failed for a missing table or database: the
    query is skipped on that side, never timed."""
    code = (s.error or {}).get("code")
    if s.warmup and st.group is not None and code in MISSING_CODES and not st.done[s.target]:
        message = " ".join(str((s.error or {}).get("message", "")).split())[:200]
        runner.skip(st, s.target, f"missing: {message}")
