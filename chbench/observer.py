"""What a running command tells whoever watches it: one protocol, any number of
subscribers.

A run's rounds (``runner/``), a load level (``load/levels.py``: every level, capacity
step and ClickBench stress phase) and a replay (``replay/driver.py``: its players' live
counts) report through the same :class:`Observer`. The live displays
(``ui/progress.py``, ``ui/load.py``, ``ui/replay.py``), the untimed checks of ``upgrade``
and ``trend`` (``upgrade/checks.py``), the results file's checkpoints (``load/driver.py``,
``replay/driver.py``), the Prometheus endpoint (``load/metrics.py``) and a capacity
step's looks (``load/capacity.py``) subscribe alike: each overrides only the events it
needs (every method defaults to nothing), and :class:`Observers` hands every event to
each in turn."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from chbench.load.levels import LevelResult
    from chbench.load.recorder import Key, Stats
    from chbench.plan import Plan
    from chbench.results import RunDocument
    from chbench.runner.runner import QueryState
    from chbench.targets import Sample, ServerInfo
    from chbench.workload import Query


class FinishedRounds(Protocol):
    """What an observer may use of a run whose rounds are done (``rounds_done``): the
    plan, the document to add to, each side's server and the settings a query runs with
    there, and a checkpoint of the file. (The runner is one; nothing else of it is.)"""

    plan: Plan
    doc: RunDocument
    infos: dict[str, ServerInfo]

    def base_settings(self, sid: str, q: Query) -> dict[str, str]: ...

    def checkpoint(self, force: bool = False) -> None: ...


class Observer:
    # -- a run's rounds -------------------------------------------------------------------
    def rounds_started(self, states: list[QueryState], plan: Plan) -> None:
        """The rounds of a session begin (after set-up and warm-up)."""

    def sample(self, st: QueryState, s: Sample) -> None:
        """One timed (or warm-up) run of a query on one side."""

    def query_done(self, st: QueryState) -> None:
        """A query needs no more runs on any side."""

    def rounds_done(self, run: FinishedRounds, names: list[str]) -> None:
        """The rounds of these queries are over and their tables still exist: untimed work on
        the targets goes here (once per performance test before its tear-down, then for the
        other queries). Ctrl-C or a lost server here ends the run as it would a round."""

    def rounds_stopped(self) -> None:
        """The session's rounds ended, however they ended."""

    def note(self, line: str) -> None:
        """A line about the run (a performance test skipped)."""

    def problem(self, line: str) -> None:
        """A line about something that failed (a set-up refused): someone must show it."""

    # -- a load level ---------------------------------------------------------------------
    def level_started(self, level: int) -> None:
        """The level's lanes are about to start."""

    def add(self, worker: int, part: dict[Key, Stats]) -> None:
        """A part of what one worker measured (exact: merged by the receiver)."""

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        """The lanes' live counts (started, late, in flight …), every tick and at the end."""

    def decided(self, totals: dict[Key, Stats], live: dict[str, Any], elapsed: float) -> bool:
        """True ends the level now: its answer is certain (a capacity step's looks)."""
        return False

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        """Every ``-d`` seconds: the last interval, per host, and the totals so far."""

    def checkpoint(self, partial: LevelResult) -> None:
        """Every few seconds: the level so far, to keep in the results file."""

    def level_finished(self) -> None:
        """The level ended, however it ended."""


class Observers(Observer):
    """Every event to each subscriber, in the order given. A problem nobody shows is
    printed to stderr; a level's checkpoint (a copy of its totals) is made only when
    someone keeps it; a level is decided when any subscriber says so (each one looks)."""

    def __init__(self, subscribers: list[Observer]) -> None:
        self.subscribers = subscribers
        self.checkpoints = any(type(o).checkpoint is not Observer.checkpoint for o in subscribers)

    def rounds_started(self, states: list[QueryState], plan: Plan) -> None:
        for o in self.subscribers:
            o.rounds_started(states, plan)

    def sample(self, st: QueryState, s: Sample) -> None:
        for o in self.subscribers:
            o.sample(st, s)

    def query_done(self, st: QueryState) -> None:
        for o in self.subscribers:
            o.query_done(st)

    def rounds_done(self, run: FinishedRounds, names: list[str]) -> None:
        for o in self.subscribers:
            o.rounds_done(run, names)

    def rounds_stopped(self) -> None:
        for o in self.subscribers:
            o.rounds_stopped()

    def note(self, line: str) -> None:
        for o in self.subscribers:
            o.note(line)

    def problem(self, line: str) -> None:
        shown = [o for o in self.subscribers if type(o).problem is not Observer.problem]
        for o in shown:
            o.problem(line)
        if not shown:
            print(line, file=sys.stderr, flush=True)

    def level_started(self, level: int) -> None:
        for o in self.subscribers:
            o.level_started(level)

    def add(self, worker: int, part: dict[Key, Stats]) -> None:
        for o in self.subscribers:
            o.add(worker, part)

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        for o in self.subscribers:
            o.status(status, final)

    def decided(self, totals: dict[Key, Stats], live: dict[str, Any], elapsed: float) -> bool:
        return any([o.decided(totals, live, elapsed) for o in self.subscribers])  # a list: every one looks

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        for o in self.subscribers:
            o.interval(level, row, hosts_stats, seconds, cumulative, elapsed)

    def checkpoint(self, partial: LevelResult) -> None:
        for o in self.subscribers:
            o.checkpoint(partial)

    def level_finished(self) -> None:
        for o in self.subscribers:
            o.level_finished()
