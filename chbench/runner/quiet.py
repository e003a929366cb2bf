"""Separate runs on a busy machine: which samples are set aside and measured again.

A separate run compares against a run made at another time, so a neighbour that was
busy during one of them is a difference between the runs. Samples measured while other
processes used more than ``--quiet-threshold`` of the CPUs are set aside: kept in the
file (``"set_aside": true``), in no verdict, counted towards no query's runs, measured
again — until ``--quiet-wait`` seconds were spent on what was set aside; after that the
machine is taken as it is and the file says it never got quiet, and the verdicts then
take every run, those set aside too (``RunDocument.never_quiet``).

Two ways to tell, best first:
- per sample, from the CPU timeline (chbench/machine/timeline.py): each sample's own
  window. A neighbour busy 300 ms of every 750 ms leaves about half of the samples
  clean, and only the others are measured again.
- per reading of the probes (every few seconds, chbench/machine/probes.py), where there
  is no timeline: every round the reading covers.

Side by side nothing is set aside (both sides share the busy machine and the paired
analysis cancels it); the timeline still records each sample's ``others_cores``.

The time spent is each set-aside sample's slot: from its start to the next timed
sample's start (so the probes, wake-ups and checkpoints after it count too — measured:
counting only the queries' own time let a suite of 10 ms queries redo rounds for
minutes), at most ``SLOT_CAP_S`` beyond its own time.
"""

from __future__ import annotations

import time
from typing import Any

from chbench.machine.timeline import MIN_WINDOW_S, BusyTimeline
from chbench.plan import Plan
from chbench.results import RunQuery, RunSample

SLOT_CAP_S = 2.0
FINAL_WAIT_S = 1.0  # after the last round: how long to wait for the timeline to cover it


class QuietGuard:
    def __init__(self, plan: Plan, machine: dict[str, Any], timeline: BusyTimeline | None) -> None:
        self.plan = plan
        self.machine = machine  # the results document's "machine" object
        self.timeline = timeline if timeline is not None and timeline.available else None
        self._prev: RunSample | None = None
        self._slots: dict[int, float] = {}  # id(sample) -> its slot, seconds

    @property
    def active(self) -> bool:
        return not self.plan.side_by_side and self.plan.quiet_wait > 0

    def started(self, s: RunSample) -> None:
        """A timed sample was taken: the previous one's slot ends where this one began."""
        if s.warmup:
            return
        if self._prev is not None:
            own = (self._prev.client_ms or 0.0) / 1000.0
            self._slots[id(self._prev)] = min(max(s.started_at - self._prev.started_at, own), own + SLOT_CAP_S)
        self._prev = s

    def _slot(self, s: RunSample) -> float:
        return self._slots.get(id(s), (s.client_ms or 0.0) / 1000.0)

    def _record(self) -> dict[str, Any]:
        return self.machine.setdefault("set_aside", {
            "threshold": self.plan.quiet_threshold, "quiet_wait_s": self.plan.quiet_wait, "spent_s": 0.0,
            "by": "timeline" if self.timeline is not None else "probes", "samples": 0, "rounds": [],
            "never_quiet": False})

    def _budget_left(self, record: dict[str, Any]) -> bool:
        if record["spent_s"] >= self.plan.quiet_wait:
            record["never_quiet"] = True
        return not record["never_quiet"]

    def check(self, queries: list[RunQuery], session: int, first_round: int, last_round: int,
              final: bool = False) -> list[tuple[int, RunSample]]:
        """After a reading (or the last round): judge what is not judged yet and set
        aside what ran on a busy machine. Returns the samples newly set aside (with
        their query's index): the runner measures them again."""
        if self.timeline is not None:
            return self._by_timeline(queries, session, final)
        return self._by_reading(queries, session, first_round, last_round)

    def _aside(self, record: dict[str, Any], s: RunSample) -> None:
        s.set_aside = True
        record["samples"] += 1
        record["spent_s"] = round(record["spent_s"] + self._slot(s), 3)

    # -- per sample -------------------------------------------------------------------------
    def _by_timeline(self, queries: list[RunQuery], session: int, final: bool) -> list[tuple[int, RunSample]]:
        tl = self.timeline
        assert tl is not None
        tl.refresh()
        if final:  # the last samples' windows end after them: wait until the sampler got there
            last = max((s.started_at + (s.client_ms or 0.0) / 1000.0 for q in queries for s in q.samples),
                       default=0.0)
            deadline = time.monotonic() + FINAL_WAIT_S
            while not tl.covers(last + MIN_WINDOW_S / 2) and time.monotonic() < deadline and tl.available:
                time.sleep(0.02)
                tl.refresh()
        out: list[tuple[int, RunSample]] = []
        for i, q in enumerate(queries):
            for s in q.samples:
                if (s.warmup or s.set_aside or s.error or s.others_cores is not None or s.client_ms is None
                        or (s.session or 0) != session):
                    continue
                cores = tl.others(s.started_at, s.started_at + s.client_ms / 1000.0)
                if cores is None:
                    continue
                s.others_cores = round(cores, 3)
                if not self.active or cores / tl.cpus <= self.plan.quiet_threshold:
                    continue
                record = self._record()
                if self._budget_left(record):
                    self._aside(record, s)
                    out.append((i, s))
        return out

    # -- per reading --------------------------------------------------------------------------
    def _by_reading(self, queries: list[RunQuery], session: int, first: int,
                    last: int) -> list[tuple[int, RunSample]]:
        readings = self.machine.get("client") or []
        if not self.active or not readings:
            return []
        r = readings[-1]
        share = float(r.get("others_cores", 0.0)) / max(1, int(r.get("cpus", 1)))
        if share <= self.plan.quiet_threshold:
            return []
        record = self._record()
        if not self._budget_left(record):
            return []
        record["rounds"].append({"session": session, "from_round": first, "to_round": last,
                                 "others_share": round(share, 4)})
        out: list[tuple[int, RunSample]] = []
        for i, q in enumerate(queries):
            for s in q.samples:
                if (s.warmup or s.set_aside or s.error or (s.session or 0) != session
                        or not first <= s.round <= last or s.client_ms is None):
                    continue
                self._aside(record, s)
                out.append((i, s))
        return out
