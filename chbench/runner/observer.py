"""What a run tells whoever watches it: one protocol, any number of subscribers.

The live display (``ui/progress.py``) and the untimed checks of ``upgrade`` and ``trend``
(``upgrade/checks.py``) subscribe the same way: ``run_plan(plan, out, display, checks)``.
Every method has a default that does nothing, so a subscriber overrides only what it
needs; ``Observers`` hands every event to each in turn."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chbench.plan import Plan
    from chbench.runner.runner import QueryState, Runner
    from chbench.targets import Sample


class RunObserver:
    def start(self, states: list[QueryState], plan: Plan) -> None:
        """The rounds of a session begin (after set-up and warm-up)."""

    def sample(self, st: QueryState, s: Sample) -> None:
        """One timed (or warm-up) run of a query on one side."""

    def query_done(self, st: QueryState) -> None:
        """A query needs no more runs on any side."""

    def rounds_done(self, run: Runner, names: list[str]) -> None:
        """The rounds of these queries are over and their tables still exist: untimed work on
        the targets goes here (once per performance test before its tear-down, then for the
        other queries). Ctrl-C or a lost server here ends the run as it would a round."""

    def stop(self) -> None:
        """The session's rounds ended, however they ended."""

    def note(self, line: str) -> None:
        """A line about the run (a performance test skipped)."""

    def problem(self, line: str) -> None:
        """A line about something that failed (a set-up refused): someone must show it."""


class Observers(RunObserver):
    """Every event to each subscriber, in the order given. A problem nobody shows is
    printed to stderr."""

    def __init__(self, subscribers: list[RunObserver]) -> None:
        self.subscribers = subscribers

    def start(self, states: list[QueryState], plan: Plan) -> None:
        for o in self.subscribers:
            o.start(states, plan)

    def sample(self, st: QueryState, s: Sample) -> None:
        for o in self.subscribers:
            o.sample(st, s)

    def query_done(self, st: QueryState) -> None:
        for o in self.subscribers:
            o.query_done(st)

    def rounds_done(self, run: Runner, names: list[str]) -> None:
        for o in self.subscribers:
            o.rounds_done(run, names)

    def stop(self) -> None:
        for o in self.subscribers:
            o.stop()

    def note(self, line: str) -> None:
        for o in self.subscribers:
            o.note(line)

    def problem(self, line: str) -> None:
        shown = [o for o in self.subscribers if type(o).problem is not RunObserver.problem]
        for o in shown:
            o.problem(line)
        if not shown:
            print(line, file=sys.stderr, flush=True)
