"""Live progress: a rich table on a terminal, one plain line per query otherwise.

Progress goes to stderr so that stdout stays clean for reports."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.live import Live
from rich.table import Table

from chbench.observer import Observer
from chbench.stats.summary import relative_ci_halfwidth

if TYPE_CHECKING:
    from chbench.plan import Plan
    from chbench.runner.runner import QueryState
    from chbench.targets import Sample


class Progress(Observer):
    """The display's base (``--quiet``): silent but for problems."""

    def rounds_started(self, states: list[QueryState], plan: Plan) -> None:
        self.states = states

    def problem(self, line: str) -> None:
        """A line about something that failed (a test file unreadable, a set-up refused):
        shown even when quiet."""
        print(line, file=sys.stderr, flush=True)


def _describe(st: QueryState, sid: str) -> str:
    if st.entry.skipped(sid):
        return f"{sid}: skipped"
    ok = st.ok_times[sid]
    errs = st.errors[sid]
    if not ok:
        return f"{sid}: {errs} errors" if errs else f"{sid}: -"
    med = float(np.median(ok))
    w = relative_ci_halfwidth(ok)
    ci = f"±{w:.1%}" if w != float("inf") else "±?"
    return f"{sid}: {len(ok):>3} runs  median {med:9.1f} ms {ci}" + (f"  {errs} errors" if errs else "")


class PlainProgress(Progress):
    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr

    def query_done(self, st: QueryState) -> None:
        print(f"{st.name:<28} " + "   ".join(_describe(st, sid) for sid in st.sides), file=self.stream, flush=True)

    def note(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def problem(self, line: str) -> None:
        self.note(line)


MAX_ROWS = 30


class LiveProgress(Progress):
    def __init__(self) -> None:
        self.console = Console(stderr=True)
        self.live: Live | None = None
        self.current = ""

    def rounds_started(self, states: list[QueryState], plan: Plan) -> None:
        super().rounds_started(states, plan)
        # no refresh thread: it would compete for the GIL with the timed client code;
        # the table is redrawn between executions instead, at most 4 times a second
        self.live = Live(self._table(), console=self.console, auto_refresh=False, transient=False)
        self.live.start(refresh=True)
        self.last_draw = time.monotonic()

    def _table(self) -> Table:
        t = Table(title="chbench run", expand=False)
        t.add_column("query")
        t.add_column("state")
        t.add_column("runs / median / 95% interval")
        states = getattr(self, "states", [])
        done = [st for st in states if st.finished()]
        shown = states
        if len(states) > MAX_ROWS:  # a long suite (performance tests): the queries at hand
            at = next((i for i, st in enumerate(states) if not st.finished()), len(states))
            shown = states[max(0, at - 3): max(0, at - 3) + MAX_ROWS]
        for st in shown:
            state = "done" if st.finished() else ("running" if st.name == self.current else "")
            t.add_row(st.name, state, "   ".join(_describe(st, sid) for sid in st.sides))
        if len(shown) < len(states):
            t.add_row(f"… {len(states)} queries", f"{len(done)} done", "")
        return t

    def note(self, line: str) -> None:
        self.console.print(line, highlight=False, markup=False)

    def problem(self, line: str) -> None:
        self.note(line)  # above the live table

    def _draw(self, force: bool = False) -> None:
        if self.live is not None and (force or time.monotonic() - self.last_draw >= 0.25):
            self.live.update(self._table(), refresh=True)
            self.last_draw = time.monotonic()

    def sample(self, st: QueryState, s: Sample) -> None:
        self.current = st.name
        self._draw()

    def query_done(self, st: QueryState) -> None:
        self._draw(force=True)

    def rounds_stopped(self) -> None:
        if self.live is not None:
            self._draw(force=True)
            self.live.stop()
            self.live = None


def make_progress(quiet: bool = False) -> Progress:
    if quiet:
        return Progress()
    if sys.stderr.isatty():
        return LiveProgress()
    return PlainProgress()
