"""What a replay shows while it runs: per target, queries sent of those due so far, in
flight, lateness, errors — on a terminal a live view (rich, refreshed a few times a
second), elsewhere (CI, a background job, a pipe) one line per target every
``EVERY_S`` seconds, so a long replay is not silent for minutes."""

from __future__ import annotations

import sys
import time
from typing import Any

from chbench.observer import Observer

EVERY_S = 10.0  # off a terminal: a 4-minute capture at 1× printed nothing until its summary


class ReplayProgress(Observer):
    """Subscribes to the replay's status events (``replay/driver.py``)."""

    def __init__(self, quiet: bool) -> None:
        self.live: Any = None
        self.quiet = quiet
        self.last = time.monotonic()
        if not quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(stderr=True), auto_refresh=False, transient=True)
            self.live.start()

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        if self.live is None and (self.quiet or final or time.monotonic() - self.last < EVERY_S):
            return  # (at the end the summary follows)
        self.last = time.monotonic()
        lines = [_line(st) for st in status["targets"]]
        if self.live is not None:
            self.live.update("chbench replay\n" + "\n".join(lines), refresh=True)
        else:
            sys.stderr.write("".join(f"chbench replay: {line}\n" for line in lines))
            sys.stderr.flush()

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def _line(st: dict[str, Any]) -> str:
    if st.get("waiting"):
        return f"{st['id']}: waiting"
    p99 = f"{st['lateness_p99_ms']:.1f}" if st.get("lateness_p99_ms") is not None else "-"
    due = f" of {st['due']:,} due" if st.get("due") is not None else ""
    return (f"{st['id']}: {st['started']:,} sent{due}, {st['sent']:,} answered, {st['in_flight']} in "
            f"flight, {st['lanes']} connections, lateness p99 {p99} ms, {st['errors']:,} errors")
