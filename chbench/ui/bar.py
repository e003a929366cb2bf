"""A progress bar for long loads: rich on a terminal, nothing otherwise (or quiet)."""

from __future__ import annotations

import sys
from typing import Any


class Bar:
    def __init__(self, label: str, unit: str, quiet: bool = False) -> None:
        self.progress: Any = None
        if sys.stderr.isatty() and not quiet:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            amount = [DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn()]
            self.progress = Progress(TextColumn(label), BarColumn(), *amount, TimeRemainingColumn(),
                                     console=Console(stderr=True), transient=True)
            self.task = self.progress.add_task(label, total=None)

    def update(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)

    def __enter__(self) -> Bar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
