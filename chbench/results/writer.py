"""The one way a results file is written while a command runs.

A :class:`ResultsWriter` holds the command's document and rewrites the file atomically
(``store.write_atomic``): ``checkpoint()`` at most every ``every_s`` seconds (or now, with
``force``), ``finish(status)`` once at the end. Used as a context manager it finishes the
file whatever ends the command: ``complete`` on success, ``interrupted`` on Ctrl-C,
``server_lost`` when the server went away, ``failed`` on any other error — so every
command leaves the same valid, finished file, with ``meta.ended_at`` set."""

from __future__ import annotations

import time
from types import TracebackType

from chbench.errors import UsageError
from chbench.outcome import Outcome
from chbench.results.document import Document
from chbench.results.environment import now_iso
from chbench.results.store import check_directory, rename_target, write_atomic


def check_output_path(path: str | None, what: str = "results") -> None:
    """Fail before anything is measured when ``path`` cannot be written."""
    if path:
        check_directory(path, what)
        if rename_target(path) is None:
            raise UsageError(f"cannot write {what} to {path}: not a regular file (results files are written "
                             "whole and renamed into place; leave out the option to keep none)")


# A checkpoint rewrites the whole file, so its cost grows with what was measured: at most
# one in WRITE_SHARE of the command's time goes to them. Seen (2026-12-07, 400 queries x 6
# runs on the embedded engine, 2 cores): a checkpoint a second, and one each time a query
# finished, wrote 3.9 MB 406 times — 78 of the run's 89 s under the profiler; the run took
# 20.5 s before and 5.3 s with this throttle, one after the other.
WRITE_SHARE = 20.0


class ResultsWriter:
    def __init__(self, path: str | None, doc: Document, every_s: float = 1.0) -> None:
        self.path = path
        self.doc = doc
        self.every_s = every_s
        self.finished = False
        self._last = 0.0
        self._took = 0.0  # the last write's duration

    def checkpoint(self, force: bool = False) -> None:
        """Write the document as it is now (unless ``force``, at most every ``every_s``
        seconds, or ``WRITE_SHARE`` times the last write's duration if longer)."""
        now = time.monotonic()
        if not self.path or (not force and now - self._last < max(self.every_s, WRITE_SHARE * self._took)):
            return
        self.doc.meta.ended_at = now_iso()
        write_atomic(self.path, self.doc.to_json())
        self._last = time.monotonic()
        self._took = self._last - now

    def finish(self, outcome: Outcome = Outcome.COMPLETE, reason: str | None = None) -> None:
        """The final write: the outcome's status and, for a stop, why."""
        self.doc.status = outcome.status
        if reason:
            self.doc.meta.extra["stop_reason"] = reason
        self.finished = True
        self.checkpoint(force=True)

    def __enter__(self) -> ResultsWriter:
        self.checkpoint(force=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.finished:
            return
        if kind is None:
            self.finish(Outcome.COMPLETE)
            return
        outcome = Outcome.of(kind)
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else kind.__name__
        self.finish(outcome, "interrupted" if outcome is Outcome.INTERRUPTED else why)
