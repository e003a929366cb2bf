"""Errors meant for people: each carries one clear line and an exit code."""

from __future__ import annotations

import logging

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_FINDING = 1  # compare: a query is slower; run: some query failed
EXIT_USAGE = 2  # bad input: usage, files, targets, credentials
EXIT_SERVER_LOST = 3  # the server went away during a run (results kept)
EXIT_INTERRUPTED = 130  # Ctrl-C (results kept)


class ChbenchError(Exception):
    """An error whose message is shown to the user as one line."""

    exit_code = EXIT_USAGE


class UsageError(ChbenchError):
    """Bad command line or input file."""


class ConnectError(ChbenchError):
    """The target cannot be reached or refused our credentials."""


class SetupFailed(ChbenchError):
    """A workload's set-up statement was refused: nothing was measured."""

    exit_code = EXIT_FINDING


class ServerLost(ChbenchError):
    """A target that was reachable stopped answering during a run."""

    exit_code = EXIT_SERVER_LOST


class QueryError(Exception):
    """One execution failed on the server: recorded in the sample, the run goes on."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message}


def quiet_library_log(name: str) -> None:
    """Keep a client library's own log lines off stderr: clickhouse-driver logs each failed
    connection attempt, clickhouse-connect an "Unexpected Http Driver Exception", each before
    raising the error chbench then reports in one line."""
    log = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
    log.propagate = False
