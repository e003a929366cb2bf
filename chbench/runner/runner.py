"""Executing a plan.

Order: each side's set-up statements, warm-up runs, then rounds, then tear-down. A round
runs every unfinished query once on each side (interleaved: q1 q2 … qn, then again),
alternating the sides run by run (A B, then B A; three or more rotate: ``core/schedule.py``)
so slow drift of the machine spreads over every query and every side. The fixed
calibration query (the drift guard) runs on each side after each of the first rounds,
then at most once a second.

A query stops when its median's 95% interval is within ±2% (at least ``min_runs``
runs), when ``max_time_per_query`` is spent, or after ``--iterations`` runs.
The results file is rewritten atomically after every query and at every stop.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from chbench.core.schedule import round_order
from chbench.core.send import execute
from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.explain.collect import collect, server_metrics
from chbench.machine.recorder import MachineRecorder
from chbench.observer import Observer, Observers
from chbench.outcome import Outcome
from chbench.plan import Plan, SidePlan, compared_pairs
from chbench.results import Calibration, Meta, ResultsWriter, RunDocument, RunQuery, RunSample, RunTarget
from chbench.results.environment import now_iso
from chbench.results.run import QuerySide
from chbench.runner.groups import GroupRun, skip_if_missing
from chbench.runner.quiet import QuietGuard
from chbench.runner.settings import (
    calibration_settings,
    check_user_settings,
    group_settings,
    jit_warmup,
    query_settings,
    settings_to_send,
    statement_settings,
)
from chbench.stats.machine import REFERENCE_MIN
from chbench.stats.paired import pair_up
from chbench.stats.stopping import Look, TimePool, look, should_stop
from chbench.stats.summary import relative_ci_halfwidth
from chbench.targets import ServerInfo, Target
from chbench.targets.base import admin_query_id, refused_setting
from chbench.workload import CALIBRATION_FALLBACK_SQL, CALIBRATION_SQL, Query, default_suite, prepare_sql
from chbench.workload.formats.suite import NUMBERS, NUMBERS_MT

# Probes, the reference task and the calibration query disturb the query that follows
# them: measured (SELECT 1 over HTTP, 300 runs), median client_ms - server_ms 1.06 ms with
# them after every round, 0.52 ms without. So they run between rounds only, at most every
# PROBES_EVERY_S, and an untimed wake-up query on every target follows them.
PROBES_EVERY_S = 3.0
CALIBRATION_EVERY_S = 3.0
CALIBRATION_MIN_GAP_S = 0.5  # while its first samples are still being gathered
CALIBRATION_MIN = 5  # every run has at least these (the missing ones after its last round)
# and more, every CALIBRATION_MIN_GAP_S, while its median is known to worse than ±1.5% (two
# runs' medians that precise can tell a 3% change of the machine), up to CALIBRATION_MAX
CALIBRATION_PRECISION = 0.015
CALIBRATION_MAX = 30


def _measured(c: Calibration) -> int:
    return sum(1 for s in c.samples if not s.warmup)


def _imprecise(c: Calibration) -> bool:
    if _measured(c) < CALIBRATION_MIN:
        return True
    ok = [s.client_ms for s in c.samples if s.ok and s.client_ms is not None]
    return _measured(c) < CALIBRATION_MAX and relative_ci_halfwidth(ok) > CALIBRATION_PRECISION


WAKE_SQL = "SELECT 1 FORMAT Null"  # the untimed wake-up after the probes
MAX_ERRORS = 3  # a query side that failed this often (or twice with no success) stops


@dataclass
class QueryState:
    name: str
    entry: RunQuery  # the query in the results document
    sides: list[str]
    done: dict[str, bool] = field(default_factory=dict)
    ok_times: dict[str, list[float]] = field(default_factory=dict)
    ok_keys: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (session, round) of each
    errors: dict[str, int] = field(default_factory=dict)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)  # per side, as sent
    spent_s: float = 0.0
    group: str | None = None  # its performance test
    overrun_said: bool = False  # the line that it runs past its budget for --min-runs

    def finished(self) -> bool:
        return all(self.done.get(s, False) for s in self.sides)


@dataclass
class RunOutcome:
    doc: RunDocument
    outcome: Outcome
    message: str | None = None

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


class Runner:
    def __init__(self, plan: Plan, out: str | None, observers: list[Observer]) -> None:
        self.plan = plan
        self.observer = Observers(observers)  # the display, upgrade's checks, … (observer.py)
        self.doc = RunDocument(meta=Meta(extra={"mode": "side-by-side" if plan.side_by_side else "single",
                                                "options": plan.options()}))
        self.writer = ResultsWriter(out, self.doc)
        self.by_id = {s.id: s for s in plan.sides}
        self.sent: dict[str, dict[str, str]] = {}
        self.infos: dict[str, ServerInfo] = {}
        self.failed_sides: dict[str, str] = {}  # side -> why its set-up failed
        self.run_token = uuid.uuid4().hex[:8]
        self.counter = 0
        self.machine: MachineRecorder | None = None  # made when the rounds begin (after set-up)
        self.session = 0
        self.quiet: QuietGuard | None = None  # what a busy machine sets aside (runner/quiet.py), with the probes
        self.pool = TimePool(plan.max_time_per_query)  # a session's unused time (stats/stopping.py)
        self.explained: dict[str, dict[str, Any]] = {}  # per side: what the profiles' collection found so far
        self.collected: set[str] = set()  # query ids whose profiles were asked for
        self.tests = plan.tests()  # what compare corrects for each other: a change needs rounds to pass

    # -- the results document ------------------------------------------------------------
    def _connect(self) -> None:
        connected: dict[int, ServerInfo] = {}
        for side in self.plan.sides:
            key = id(side.target)
            if key not in connected:
                if self.plan.explain or self.plan.server_metrics:
                    side.target.identify_runs()  # before connecting: chDB starts with its logs
                connected[key] = side.target.connect()
            self.infos[side.id] = connected[key]

    def _suite_sources(self) -> None:
        """The built-in suite reads numbers_mt(), which servers before 19.x lack (18.16:
        "Unknown table function numbers_mt" for 9 of its 10 queries): where one lacks it,
        every side running the suite reads numbers() instead, so the sides still run one
        SQL, and the file's notes say so."""
        suite = [s for s in self.plan.sides if s.scale is not None]
        lacking = sorted({s.id for s in suite if self.infos[s.id].version_tuple() < (20,)
                          and not s.target.has_table_function(NUMBERS_MT)})
        if not lacking:
            return
        for side in suite:
            assert side.scale is not None
            side.workload = default_suite(side.scale, NUMBERS)
        versions = ", ".join(f"{sid} ({self.infos[sid].version})" for sid in lacking)
        note = (f"the built-in suite reads numbers() instead of numbers_mt() on every side: no numbers_mt() on "
                f"{versions}; one source stream, so its times do not compare with numbers_mt() runs")
        self.observer.note(f"chbench: note: {note}")
        self.doc.meta.extra.setdefault("notes", []).append(note)

    def _target_entry(self, side: SidePlan) -> RunTarget:
        info = self.infos[side.id]
        sent, unsupported, notes = settings_to_send(side, info, self.plan)
        self.sent[side.id] = sent
        described = side.target.describe()
        return RunTarget(
            id=side.id, kind=described.pop("kind"), url=described.pop("url"), label=side.label or side.target.url,
            server_version=info.version,
            capabilities={"query_log": info.query_log, "settings_known": len(info.settings),
                          "in_process": side.target.capabilities.in_process},
            settings_requested=dict(side.settings), settings_sent=sent, unsupported_settings=unsupported,
            scale=side.scale, notes=info.notes + notes,
            extra={**described, "workload": side.workload.describe()})

    def _states(self) -> list[QueryState]:
        """Each query's state for a session; its entry in the file is made by the first."""
        states = []
        entries = {q.name: q for q in self.doc.queries}
        for name in self.plan.query_names():
            sides = [s.id for s in self.plan.sides if s.query(name) is not None]
            first = self.by_id[sides[0]].query(name)
            assert first is not None
            # a performance test's query is sent as written: its author adds FORMAT Null
            keep = self.plan.keep_format or first.group is not None
            entry = entries.get(name) or RunQuery(name=name, sql=first.sql, sql_sent=prepare_sql(first.sql, keep),
                                                  target=sides[0] if len(sides) == 1 else sides, sides={},
                                                  test=first.group)
            st = QueryState(name=name, entry=entry, sides=sides, group=first.group)
            for sid in sides:
                side = self.by_id[sid]
                q = side.query(name)
                assert q is not None
                st.settings[sid], unknown = query_settings(self.base_settings(sid, q), q.settings, self.infos[sid])
                entry.sides[sid] = QuerySide(sql=q.sql, sql_sent=prepare_sql(q.sql, keep),
                                             settings=dict(q.settings) if q.settings else None,
                                             unsupported_settings=unknown or None)
                st.done[sid], st.ok_times[sid], st.ok_keys[sid], st.errors[sid] = sid in self.failed_sides, [], [], 0
            if name not in entries:
                self.doc.queries.append(entry)
            states.append(st)
        return states

    # -- execution -------------------------------------------------------------------------
    def _execute(self, side: SidePlan, sql_sent: str, settings: dict[str, str], round_no: int,
                 warmup: bool) -> RunSample:
        self.counter += 1
        qid = f"chbench-{self.run_token}-{self.counter}"
        started = time.time()
        s = execute(side.target, sql_sent, settings, qid, self.plan.timeout)
        sample = RunSample.of(s, side.id, round_no, warmup, round(started, 3))
        if self.plan.sessions > 1:
            sample.session = self.session
        return sample

    def run(self) -> RunOutcome:
        warning = self.plan.rounds_warning()
        if warning:  # before connecting: the user can stop and rerun at once
            self.observer.problem(f"chbench: warning: {warning}")
            self.doc.meta.extra.setdefault("notes", []).append(warning)
        self._connect()
        for note in check_user_settings(self.plan, self.infos):
            self.observer.note(f"chbench: note: {note}")
            self.doc.meta.extra.setdefault("notes", []).append(note)
        self._suite_sources()
        self.doc.targets = [self._target_entry(side) for side in self.plan.sides]
        for side in self.plan.sides:
            where = f"side {side.id}: " if len(self.plan.sides) > 1 else ""
            if (refused := refused_setting(side.target, self.sent[side.id], side.settings, where)) is not None:
                raise refused
        states = self._states()
        if self.plan.calibration:
            self.doc.calibration = [Calibration(target=s.id, sql=CALIBRATION_SQL,
                                                settings=calibration_settings(self.infos[s.id], self.plan))
                                    for s in self.plan.sides]
        for note in self.plan.notes:
            self.observer.note(f"chbench: note: {note}")
            self.doc.meta.extra.setdefault("notes", []).append(note)
        if self.plan.sessions > 1:
            self.doc.meta.extra["sessions"] = [{"index": 0, "started_at": now_iso()}]
            if any(s.target.capabilities.in_process for s in self.plan.sides):
                self.doc.meta.extra.setdefault("notes", []).append(
                    "sessions of the in-process engine share its process: separated by the pause, not a restart; "
                    "a level the process gives one query for its life is not in their spread (seen: one query "
                    "-15% in all three sessions of one run); this chDB is not in chbench's catalog, so it cannot be "
                    "moved to a worker: --target embedded@VERSION runs a catalog release in a process per session")
        with self.writer:  # any other error still finishes the file ("failed")
            try:
                stop = self._sessions(states)
                if stop is None:
                    loose = [st.name for st in states if st.group is None]
                    stop = self._guard(partial(self.observer.rounds_done, self, loose))
            finally:
                self._teardown()  # whatever ended the run
                if self.machine is not None:
                    self.machine.close()
            if stop is not None:
                self.writer.finish(*stop)
                return RunOutcome(self.doc, *stop)
            self.writer.finish(Outcome.COMPLETE)
        failed = [st.name for st in states if st.entry.errors]
        problems = [f"side {sid}: set-up failed: {why}" for sid, why in self.failed_sides.items()]
        if failed:
            problems.append(f"{len(failed)} quer{'y' if len(failed) == 1 else 'ies'} failed: {_some(failed)}")
        unreadable = [t["name"] for t in self.doc.tests if t.get("error")]
        broken = [t["name"] for t in self.doc.tests if t.get("failed")]
        if broken:
            problems.append(f"set-up failed in {len(broken)} test{'s' if len(broken) > 1 else ''}: {_some(broken)}")
        if unreadable:
            problems.append(f"{len(unreadable)} test file{'s' if len(unreadable) > 1 else ''} could not be read: "
                            f"{_some(unreadable)}")
            return RunOutcome(self.doc, Outcome.BAD_INPUT, "; ".join(problems))
        return RunOutcome(self.doc, Outcome.FINDING, "; ".join(problems)) if problems else \
            RunOutcome(self.doc, Outcome.COMPLETE)

    def _sessions(self, states: list[QueryState]) -> tuple[Outcome, str] | None:
        """Every session (one unless --sessions), then the server metrics; (outcome, why)
        if stopped early."""
        stop = self._measure(states, 0)
        for k in range(1, self.plan.sessions):
            if stop is not None:
                return stop
            stop = self._guard(partial(self._next_session, k))
            if stop is None:
                stop = self._measure(self._states(), k)
        if stop is None and (self.plan.explain or self.plan.server_metrics):
            stop = self._guard(self._explain)
        return stop

    def _guard(self, step: Callable[[], None]) -> tuple[Outcome, str] | None:
        try:
            step()
        except (KeyboardInterrupt, ServerLost) as e:
            outcome = Outcome.of(type(e))
            return outcome, "interrupted" if outcome is Outcome.INTERRUPTED else str(e)
        return None

    def _measure(self, states: list[QueryState], session: int) -> tuple[Outcome, str] | None:
        """One session: (set-up, the first time), warm-up and rounds."""
        def body() -> None:
            if session == 0:
                self._setup(states)
                if self.plan.probes:
                    self.machine = MachineRecorder([(s.id, s.target) for s in self.plan.sides], self.doc.machine)
                    self.quiet = QuietGuard(self.plan, self.doc.machine, self.machine.timeline)
            self.observer.rounds_started(states, self.plan)
            self.pool = TimePool(self.plan.max_time_per_query)
            try:
                self._phases(states)
            finally:
                self.observer.rounds_stopped()
                if self.plan.iterations is None and self.plan.side_by_side:
                    self.doc.meta.extra.setdefault("time_pool", []).append(self.pool.to_json())

        return self._guard(body)

    def _next_session(self, k: int) -> None:
        """A pause, then fresh connections to every server target (an in-process engine
        keeps its process: said in the file)."""
        if self.plan.explain or self.plan.server_metrics:
            self._explain(before_restart=True)
        time.sleep(self.plan.session_gap)
        self.session = k
        for target in {id(s.target): s.target for s in self.plan.sides}.values():
            if target.capabilities.in_process:
                continue
            try:
                note = target.new_session()
            except ConnectError as e:
                raise ServerLost(f"session {k}: {e}") from None
            notes = self.doc.meta.extra.setdefault("notes", [])
            if note and note not in notes:
                notes.append(note)
        self.doc.meta.extra.setdefault("sessions", []).append({"index": k, "started_at": now_iso()})

    # -- performance tests: one group after another (runner/groups.py) ---------------------
    def _group_names(self) -> list[str]:
        names: list[str] = []
        for side in self.plan.sides:
            names += [g.name for g in side.workload.groups if g.name not in names]
        return names

    def _phases(self, states: list[QueryState]) -> None:
        """The queries outside any group, then each group with its own set-up and tear-down."""
        loose = [st for st in states if st.group is None]
        if loose:
            self._warmup(loose)
            self._rounds(loose)
        for name in self._group_names():
            group = GroupRun(self, name, [st for st in states if st.group == name])
            if not group.check():
                continue
            try:
                group.setup()
                group.check_queries()
                # at least one untimed run, as ClickHouse's runner prewarms: what the
                # static check missed (a missing table) fails there, never timed
                self._warmup(group.states, at_least=1)
                self._rounds(group.states)
                self.observer.rounds_done(self, [st.name for st in group.states])
            finally:
                group.teardown()
                self.writer.checkpoint(force=True)

    def checkpoint(self, force: bool = False) -> None:
        """The results file rewritten (``force``: now; else at most every few seconds)."""
        self.writer.checkpoint(force=force)

    def base_settings(self, sid: str, q: Query) -> dict[str, str]:
        """What a query of this side runs with before its own settings: the side's, with
        its performance test's on top (and the user's over both)."""
        side = self.by_id[sid]
        group = side.workload.group(q.group) if q.group else None
        if group is None:
            return self.sent[sid]
        return group_settings(self.sent[sid], group.settings, side.settings, self.infos[sid])

    def skip(self, st: QueryState, sid: str, why: str) -> None:
        """This side does not run the query, for this reason (never timed)."""
        if sid in st.sides and not st.done.get(sid):
            st.done[sid] = True
            st.entry.sides[sid].skipped = why


    # -- set-up and tear-down --------------------------------------------------------------
    def _groups(self, which: str) -> list[tuple[Target, list[str], list[SidePlan]]]:
        """Sides that reach the same data with the same statements run them once."""
        groups: dict[tuple[object, ...], tuple[Target, list[str], list[SidePlan]]] = {}
        for side in self.plan.sides:
            statements = list(getattr(side.workload, which))
            if statements:
                key = (side.target.data_key(), tuple(statements))
                groups.setdefault(key, (side.target, statements, []))[2].append(side)
        return list(groups.values())

    def _setup(self, states: list[QueryState]) -> None:
        for target, statements, sides in self._groups("setup"):
            for sql in statements:
                try:
                    target.statement(sql, statement_settings(self.sent[sides[0].id]))
                except QueryError as e:
                    why = f"{' '.join(sql.split())[:80]}: {e.message}"
                    for side in sides:
                        self.failed_sides[side.id] = why
                        next(t for t in self.doc.targets if t.id == side.id).extra["setup_error"] = {
                            "statement": sql, "error": e.as_dict()}
                        for st in states:
                            if side.id in st.sides:
                                st.done[side.id] = True
                    break
        self.writer.checkpoint(force=True)

    def _teardown(self) -> None:
        """Best effort, whatever ended the run; a failure is a note in the file."""
        for target, statements, sides in self._groups("teardown"):
            for sql in statements:
                try:
                    target.statement(sql, statement_settings(self.sent.get(sides[0].id, {})))
                except (QueryError, ServerLost) as e:
                    self.doc.meta.extra.setdefault("teardown_errors", []).append(
                        f"{' '.join(sql.split())[:80]}: {getattr(e, 'message', None) or e}")

    # -- rounds ----------------------------------------------------------------------------
    def _record(self, st: QueryState, s: RunSample) -> None:
        st.entry.samples.append(s)
        if s.warmup:
            return
        if s.error:
            st.errors[s.target] += 1
            st.entry.errors += 1
        elif s.client_ms is not None:
            st.ok_times[s.target].append(s.client_ms)
            st.ok_keys[s.target].append((s.session or 0, s.round))
        if s.client_ms is not None:
            st.spent_s += s.client_ms / 1000.0

    def _update_done(self, st: QueryState) -> None:
        """Sides stop together (so side-by-side runs stay paired), except a side that
        keeps failing, which stops on its own."""
        plan = self.plan
        live = []
        for sid in st.sides:
            errs = st.errors[sid]
            if errs >= MAX_ERRORS or (errs >= 2 and not st.ok_times[sid]):
                st.done[sid] = True
            if not st.done[sid]:
                live.append(sid)
        if not live:
            return
        runs = {sid: len(st.ok_times[sid]) + st.errors[sid] for sid in live}
        if plan.iterations is not None:
            finished = all(runs[sid] >= plan.iterations for sid in live)
        else:
            finished = should_stop(self._look(st, live), self.pool, st.name, st.spent_s,
                                   min(len(st.ok_times[sid]) for sid in live), min(runs.values()), max(runs.values()),
                                   plan.min_runs, plan.max_runs)
        if finished:
            for sid in live:
                st.done[sid] = True
        elif plan.iterations is None and not st.overrun_said:
            self._overrun(st, min(runs.values()))

    def _overrun(self, st: QueryState, fewest: int) -> None:
        """Said once, when a query at its time budget still lacks ``--min-runs``: it goes
        on, since fewer runs give no verdict, for about this long (seen: one side 132 s a
        run, five rounds ran 11 minutes past a 20 s budget and nothing said why)."""
        budget = self.plan.max_time_per_query
        if st.spent_s < budget or fewest < 1 or fewest >= self.plan.min_runs:
            return
        more = st.spent_s / fewest * (self.plan.min_runs - fewest)
        if more < budget:  # a little over, as a query's last round often is
            return
        st.overrun_said = True
        line = (f"{st.name}: a round takes {st.spent_s / fewest:.0f} s, so its {self.plan.min_runs} runs (--min-runs) "
                f"go ~{more:.0f} s past its {budget:g} s budget (--max-time-per-query); --min-runs or --iterations "
                "bounds it")
        self.doc.meta.extra.setdefault("notes", []).append(line)
        self.observer.note(f"chbench: {line}")

    def _look(self, st: QueryState, live: list[str]) -> Look:
        """Side by side, the intervals compare will judge: the typical per-round ratio's
        (stats/paired.py) of every pair it judges — precise within ±precision, decided at
        the threshold (stats/stopping.py); one side: its median's, precise is all."""
        plan = self.plan
        if len(live) < 2:
            return Look(relative_ci_halfwidth(st.ok_times[live[0]]) <= plan.target_precision, True)
        precise = decided = True
        for x, y in compared_pairs(live):  # every pair compare will judge (plan.compared_pairs)
            a, b = ([(k, t) for k, t in zip(st.ok_keys[sid], st.ok_times[sid], strict=True)] for sid in (x, y))
            pairs = pair_up(a, b)
            pair = look(pairs.d, plan.target_precision, plan.threshold, self.tests)
            precise = precise and pair.precise and len(pairs) >= plan.min_runs
            decided = decided and pair.decided
        return Look(precise, decided)

    def _run_once(self, st: QueryState, sid: str, round_no: int, warmup: bool) -> None:
        s = self._execute(self.by_id[sid], st.entry.sides[sid].sql_sent, st.settings[sid], round_no, warmup)
        self._record(st, s)
        if self.quiet is not None:
            self.quiet.started(s)
        if warmup and s.error:
            skip_if_missing(self, st, s)
        self.observer.sample(st, s)

    def _warmup(self, states: list[QueryState], at_least: int = 0) -> None:
        """Each query's untimed runs on each side, round by round: ``--warmup``, or where
        not given, 1 or past the JIT's compile (``jit_warmup``: 4 runs on today's defaults)."""
        need = {(st.name, sid): max(at_least, self._warmup_runs(st, sid)) for st in states for sid in st.sides}
        for k in range(max(need.values(), default=0)):
            for st in states:
                for sid in st.sides:
                    if not st.done[sid] and k < need[(st.name, sid)]:
                        self._run_once(st, sid, -1, True)
            self.writer.checkpoint()

    def _warmup_runs(self, st: QueryState, sid: str) -> int:
        if self.plan.warmup is not None:
            return self.plan.warmup
        if self.session > 0 and self.by_id[sid].target.keeps_compiled_code():
            return 1  # compiled already: the JIT's cache is the server's (the engine's)
        n = max(1, jit_warmup({**self.infos[sid].settings, **st.settings[sid]}))
        runs = self.doc.meta.extra.setdefault("warmup_runs", {})
        runs[sid] = max(n, runs.get(sid, 0))
        return n

    def _rounds(self, states: list[QueryState]) -> None:
        round_no = 0
        last_calibration = -math.inf
        last_probe = time.monotonic()  # the first reading covers the first rounds
        first_unread = 0  # the first round the next reading covers
        pending = [st for st in states if not st.finished()]
        while pending:
            batch = pending if self.plan.interleave else pending[:1]
            for st in batch:
                for sid in round_order(st.sides, round_no):
                    if not st.done[sid]:
                        self._run_once(st, sid, round_no, False)
                self._update_done(st)
                if st.finished():
                    self.observer.query_done(st)
                self.writer.checkpoint()
            pending = [st for st in pending if not st.finished()]
            disturbed = False
            few = any(_imprecise(c) for c in self.doc.calibration)
            since = time.monotonic() - last_calibration
            if self.doc.calibration and ((few and since >= CALIBRATION_MIN_GAP_S) or since >= CALIBRATION_EVERY_S):
                self._calibrate(round_no)
                last_calibration, disturbed = time.monotonic(), True
            if self.machine is not None and (not pending or time.monotonic() - last_probe >= PROBES_EVERY_S):
                self.machine.read(round_no, self.session)
                last_probe, disturbed = time.monotonic(), True
                if self._set_aside(states, first_unread, round_no, final=not pending):
                    pending = [st for st in states if not st.finished()]
                first_unread = round_no + 1
            if disturbed and pending:
                self._wake()
            round_no += 1
            self.writer.checkpoint()
        # a short run still gets the drift guard's first samples: after the last round no
        # timed query follows them, so they disturb nothing
        while any(_measured(c) < CALIBRATION_MIN and c.target not in self.failed_sides
                  for c in self.doc.calibration):
            self._calibrate(round_no)
        if self.machine is not None:  # and the reference task enough timings to compare machines
            self.machine.top_up_reference(round_no, self.session, REFERENCE_MIN)

    def _set_aside(self, states: list[QueryState], first: int, last: int, final: bool) -> bool:
        """Rounds ``first``…``last`` of a separate run, judged (runner/quiet.py): what
        ran on a busy machine is set aside, its query measured again. Returns whether any
        query has runs to measure again."""
        if self.quiet is None:
            return False
        aside = self.quiet.check([st.entry for st in states], self.session, first, last, final)
        again = False
        for i, s in aside:
            st = states[i]
            st.spent_s -= (s.client_ms or 0.0) / 1000.0  # measured again without eating its time budget
            key = (s.session or 0, s.round)
            if key in st.ok_keys[s.target]:
                k = st.ok_keys[s.target].index(key)
                del st.ok_keys[s.target][k], st.ok_times[s.target][k]
            if s.target not in self.failed_sides:
                st.done[s.target] = False
                again = True
        for i in {i for i, _ in aside}:
            self._update_done(states[i])
        return again

    def _wake(self) -> None:
        """An untimed query on every target after the probes: the next timed query does
        not pay for a connection, a server thread or a worker that went idle meanwhile."""
        for sid, target in {id(s.target): (s.id, s.target) for s in self.plan.sides}.values():
            if sid in self.failed_sides:
                continue
            with contextlib.suppress(QueryError):
                target.execute(WAKE_SQL, self.sent[sid], admin_query_id(), self.plan.timeout)

    def _calibrate(self, round_no: int) -> None:
        for c in self.doc.calibration:
            if c.target in self.failed_sides:
                continue
            side = self.by_id[c.target]
            sent = self.sent[c.target] if c.settings is None else c.settings
            if not c.samples:  # past the JIT's compile first, as every query (_warmup_runs)
                for _ in range(jit_warmup({**self.infos[c.target].settings, **sent})):
                    c.samples.append(self._execute(side, prepare_sql(c.sql), sent, round_no, True))
                    if c.samples[-1].error:
                        break
            s = self._execute(side, prepare_sql(c.sql), sent, round_no, False)
            if s.error and not any(x.ok for x in c.samples) and c.sql != CALIBRATION_FALLBACK_SQL:
                c.sql = CALIBRATION_FALLBACK_SQL  # e.g. no numbers_mt on 18.x
                s = self._execute(side, prepare_sql(c.sql), sent, round_no, False)
            c.samples.append(s)

    # -- the server's profile of every run (chbench explain, --server-metrics) ------------
    def _explain(self, before_restart: bool = False) -> None:
        """Each distinct target's profiles, in batches by query_id, after the rounds;
        what a target cannot give is said once per side (``meta.explain``; with
        ``--server-metrics`` alone, ``meta.server_metrics_notes``). ``before_restart``:
        between sessions, the runs so far of the targets whose logs go with their process
        (``Capabilities.logs_outlive_session``: a chDB worker's query_log starts empty in
        the next one — 410 of 629 runs of a 3-session run were missing when read after
        the rounds only)."""
        info = self.explained
        for target, side_ids in self._targets_with_sides():
            if before_restart and target.capabilities.logs_outlive_session:
                continue
            note = target.explain_note()
            if note is not None:
                info.update({sid: {"counters": False, "operators": False, "runs": 0, "notes": [note]}
                             for sid in side_ids})
                continue
            samples = [s for q in self.doc.queries for s in q.samples
                       if s.target in side_ids and not s.warmup and not s.error and s.query_id not in self.collected]
            try:
                got = collect(target, [s.query_id for s in samples], trace_log=self.plan.trace_log,
                              profiled=self.plan.profile_ms is not None,
                              since=min((s.started_at for s in samples), default=None))
            except QueryError as e:
                info.update({sid: {"counters": False, "operators": False, "runs": 0,
                                   "notes": [f"no server profile: {e.message}"]} for sid in side_ids})
                continue
            for s in samples:
                self._profiled(s, got.profiles.get(s.query_id))
            self.collected.update(s.query_id for s in samples)
            info.update({sid: _merged(info.get(sid), got.describe()) for sid in side_ids})
        if before_restart:
            return
        if self.plan.explain:
            self.doc.meta.extra["explain"] = info
        if self.plan.server_metrics:
            notes = [f"{sid}: {n}" for sid, i in info.items() if not i["counters"] for n in i["notes"]]
            if notes:
                self.doc.meta.extra["server_metrics_notes"] = notes

    def _profiled(self, s: RunSample, profile: dict[str, Any] | None) -> None:
        """A run's profile on its sample; with ``--server-metrics`` also its query_log
        numbers, and query_log's duration where the target gave no server time (18.16
        over HTTP sends none). Not by default: that duration is whole milliseconds (a
        3 ms query on 18.16 logged 0)."""
        metrics = server_metrics(profile) if self.plan.server_metrics else None
        if metrics is not None:
            s.server_metrics = metrics
            if s.server_ms is None:
                s.server_ms, s.server_ms_source = float(metrics["query_duration_ms"]), "query_log"
        s.profile = profile if self.plan.explain else None

    def _targets_with_sides(self) -> list[tuple[Target, list[str]]]:
        """Each distinct target once, with the sides it serves (sides may share one)."""
        out: dict[int, tuple[Target, list[str]]] = {}
        for side in self.plan.sides:
            out.setdefault(id(side.target), (side.target, []))[1].append(side.id)
        return list(out.values())


def _merged(was: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    """Two collections of one side's profiles (before a session's restart, and after the
    rounds) as one: their runs added, their notes both kept."""
    if not was:
        return now
    return {**now, "counters": was["counters"] or now["counters"], "operators": was["operators"] or now["operators"],
            "stacks": was.get("stacks", False) or now.get("stacks", False), "runs": was["runs"] + now["runs"],
            "notes": list(dict.fromkeys([*was["notes"], *now["notes"]]))}


def _some(names: list[str]) -> str:
    return ", ".join(names[:5]) + (" …" if len(names) > 5 else "")


def run_plan(plan: Plan, out: str | None, *observers: Observer) -> RunOutcome:
    """The plan measured into ``out``; each observer (the display first) sees it happen."""
    return Runner(plan, out, list(observers)).run()


def close_targets(targets: list[Target]) -> None:
    for t in {id(t): t for t in targets}.values():
        with contextlib.suppress(Exception):  # closing is best effort
            t.close()
