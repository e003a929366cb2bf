"""How a command ended — the one place where a way of ending becomes a results file's
``status`` and the process's exit code.

Every command that measures ends in one :class:`Outcome`; ``ResultsWriter.finish`` writes
its ``status`` and the command returns its ``exit_code``. An exception that ends a
command is turned into one by :meth:`Outcome.of` (Ctrl-C: interrupted; a lost server or
engine: server_lost; anything else: failed)."""

from __future__ import annotations

from enum import Enum

from chbench.engines.process import EngineLost
from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_SERVER_LOST, EXIT_USAGE, ServerLost


class Outcome(Enum):
    COMPLETE = ("complete", EXIT_OK)
    FINDING = ("complete", EXIT_FINDING)  # finished, and found what exit 1 reports (a slower query, a failed one)
    FAILED = ("failed", EXIT_FINDING)  # stopped by a failure (a query without --continue_on_errors, an error)
    SERVER_LOST = ("server_lost", EXIT_SERVER_LOST)  # a server or engine went away (results kept)
    INTERRUPTED = ("interrupted", EXIT_INTERRUPTED)  # Ctrl-C (results kept)
    BAD_INPUT = ("complete", EXIT_USAGE)  # finished what it could read (a test file that does not parse)

    @property
    def status(self) -> str:
        """What the results file says."""
        return self.value[0]

    @property
    def exit_code(self) -> int:
        return self.value[1]

    @property
    def finished(self) -> bool:
        """Measured everything it was asked to (with or without a finding)."""
        return self in (Outcome.COMPLETE, Outcome.FINDING)

    @classmethod
    def of(cls, kind: type[BaseException]) -> Outcome:
        """The outcome of a command ended by an exception of ``kind``."""
        if issubclass(kind, KeyboardInterrupt):
            return cls.INTERRUPTED
        if issubclass(kind, ServerLost | EngineLost):
            return cls.SERVER_LOST
        return cls.FAILED
