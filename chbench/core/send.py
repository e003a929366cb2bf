"""The one sequential send: a timed query, the same for every caller that sends one
query at a time (``run``'s rounds, the ClickBench runner, the answer checks of upgrade
and replay): a query the server refuses becomes a sample carrying its error; a lost
server or Ctrl-C goes up to the caller.

The concurrent senders (load levels, capacity steps, ClickBench stress, ``--workers``
processes, distributed lane hosts, replay) run on the lanes (``lanes.py``): closed loop,
open-loop schedules and captured offsets (``schedule.py``), at thousands of queries a
second."""

from __future__ import annotations

import gc

from chbench.errors import QueryError
from chbench.targets import Result, Sample, Target


def execute(target: Target, sql: str, settings: dict[str, str], query_id: str, timeout: float | None,
            pause_gc: bool = True) -> Sample:
    """``target.execute``; with ``pause_gc`` no cyclic-GC pause lands inside the timing
    (single-threaded callers only: the switch is process-wide)."""
    if pause_gc:
        gc.disable()
    try:
        return target.execute(sql, settings, query_id, timeout)
    except QueryError as e:
        return Sample(query_id=query_id, error=e.as_dict())
    finally:
        if pause_gc:
            gc.enable()


def fetch(target: Target, sql: str, settings: dict[str, str], query_id: str,
          timeout: float | None) -> tuple[Sample, Result | None]:
    """``target.fetch`` (the result too, for checksums), GC paused, errors as samples."""
    gc.disable()
    try:
        return target.fetch(sql, settings, query_id, timeout)
    except QueryError as e:
        return Sample(query_id=query_id, error=e.as_dict()), None
    finally:
        gc.enable()
