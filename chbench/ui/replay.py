"""What a replay shows while it runs, on a terminal only: per target, queries sent of
those due so far, in flight, lateness, errors (rich, refreshed a few times a second)."""

from __future__ import annotations

import sys
from typing import Any

from chbench.observer import Observer


class ReplayProgress(Observer):
    """Subscribes to the replay's status events (``replay/driver.py``)."""

    def __init__(self, quiet: bool) -> None:
        self.live: Any = None
        if not quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(stderr=True), auto_refresh=False, transient=True)
            self.live.start()

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        if self.live is None:
            return
        lines = []
        for st in status["targets"]:
            if st.get("waiting"):
                lines.append(f"{st['id']}: waiting")
                continue
            p99 = f"{st['lateness_p99_ms']:.1f}" if st.get("lateness_p99_ms") is not None else "-"
            due = f" of {st['due']:,} due" if st.get("due") is not None else ""
            lines.append(f"{st['id']}: {st['started']:,} sent{due}, {st['sent']:,} answered, {st['in_flight']} in "
                         f"flight, {st['lanes']} connections, lateness p99 {p99} ms, {st['errors']:,} errors")
        self.live.update("chbench replay\n" + "\n".join(lines), refresh=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
