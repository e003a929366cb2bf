"""What a command shows while it runs, on stderr: the live view of a run, load's live
view and intermediate reports, progress bars. Final reports are ``chbench.export``'s."""

from __future__ import annotations

import sys
from collections.abc import Callable


def say(quiet: bool = False) -> Callable[[str], None]:
    """A line of progress on stderr (nothing when quiet)."""

    def line(text: str) -> None:
        if not quiet:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    return line
