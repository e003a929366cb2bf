"""What a replay shows while it runs, on a terminal only: per target, queries sent of
those due so far, in flight, lateness, errors (rich, refreshed a few times a second)."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np


class ReplayProgress:
    def __init__(self, quiet: bool) -> None:
        self.live: Any = None
        self.last = 0.0
        if not quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(stderr=True), auto_refresh=False, transient=True)
            self.live.start()

    def update(self, doc: Any, sides: list[Any]) -> None:
        if self.live is None or time.monotonic() - self.last < 0.5:
            return
        self.last = time.monotonic()
        lines = []
        for s in sides:
            pl = s.player
            if pl is None:
                lines.append(f"{s.id}: waiting")
                continue
            st = pl.status()
            with pl.samples.lock:
                late = np.frombuffer(pl.samples.lateness_ms, dtype=float) if len(pl.samples.lateness_ms) else None
                errors = sum(1 for c in pl.samples.error_code if c)
            p99 = f"{float(np.percentile(late, 99)):.1f}" if late is not None and len(late) else "-"
            due = f" of {st['due']:,} due" if st.get("due") is not None else ""
            lines.append(f"{s.id}: {st['started']:,} sent{due}, {st['sent']:,} answered, {st['in_flight']} in flight, "
                         f"{st['lanes']} connections, lateness p99 {p99} ms, {errors:,} errors")
        self.live.update("chbench replay\n" + "\n".join(lines), refresh=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
