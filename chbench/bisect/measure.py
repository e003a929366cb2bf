"""What ``chbench bisect`` measures with: side-by-side runs of the real runner on two
versions' targets (one per version, opened on first use and kept for the whole bisect),
and each version's answer. Each version's data is built once (its set-up statements,
before its first run or answer); the runs then measure the query alone. Every run is
kept (``runs`` of the bisect file), so nothing measured is lost and a comparison asked
twice is measured once (``search.py``).

Targets come from a factory (``version → Target``): ``embedded@VERSION`` for the catalog,
a server from ``--engines-from DIR``, or a scripted fake in bench/bisect_bars.py's
simulation — the runner, the pairing and the decisions are the same code."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from chbench.errors import QueryError, ServerLost, UsageError
from chbench.outcome import Outcome
from chbench.plan import Plan, SidePlan
from chbench.runner import close_targets, run_plan
from chbench.targets import Target
from chbench.targets.base import known_to_none
from chbench.ui.progress import make_progress
from chbench.workload import Workload


@dataclass
class Measurer:
    versions: list[str]
    make_target: Callable[[str], Target]
    workload: Workload  # one query (and its set-up)
    settings: dict[str, str] = field(default_factory=dict)
    warmup: int | None = None
    timeout: float | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)  # every run: {"old", "new", "run": document}
    on_run: Callable[[], None] = lambda: None  # after each run (the caller's checkpoint)
    targets: dict[str, Target] = field(default_factory=dict)
    prepared: set[str] = field(default_factory=set)
    measured: set[str] = field(default_factory=set)  # versions whose engine ran the query (its JIT compiled)

    def target(self, i: int) -> Target:
        v = self.versions[i]
        if v not in self.targets:
            self.targets[v] = self.make_target(v)
        return self.targets[v]

    def __call__(self, old: int, new: int, rounds: int) -> list[float]:
        """``rounds`` more rounds of old (A) and new (B) side by side; their per-round
        log ratios log(t_new / t_old)."""
        for i in (old, new):
            self.prepare(i)
        timed = replace(self.workload, setup=[], teardown=[])  # the data is built once per version
        sides = [SidePlan(sid, self.target(i), timed, dict(self.settings),
                          label=f"ClickHouse {self.versions[i]}") for sid, i in (("A", old), ("B", new))]
        # a version measured before compiled the query already: one warm-up run is enough
        # then (the default goes past the JIT's compile: 4 runs, runner/settings.py)
        warm = self.warmup is None and {self.versions[old], self.versions[new]} <= self.measured
        plan = Plan(sides=sides, warmup=1 if warm else self.warmup, iterations=rounds, timeout=self.timeout,
                    calibration=False, probes=False, explain=False, more_to_come=True)
        outcome = run_plan(plan, None, make_progress(True))
        self.runs.append({"old": self.versions[old], "new": self.versions[new], "run": outcome.doc.to_json()})
        self.measured |= {self.versions[old], self.versions[new]}
        self.on_run()
        if outcome.outcome is Outcome.INTERRUPTED:
            raise KeyboardInterrupt
        if outcome.outcome is Outcome.SERVER_LOST:
            raise ServerLost(outcome.message or "an engine was lost")
        q = outcome.doc.queries[0]
        times: dict[str, dict[int, float]] = {"A": {}, "B": {}}
        errors: dict[str, str] = {}
        for s in q.samples:
            if s.warmup:
                continue
            if s.error:
                errors[s.target] = str(s.error.get("message", s.error))[:200]
            elif s.client_ms:
                times[s.target][s.round] = s.client_ms
        if errors and not (times["A"] and times["B"]):
            sid = next(iter(errors))
            v = self.versions[old if sid == "A" else new]
            raise UsageError(f"the query fails on ClickHouse {v}: {errors[sid]}")
        return [math.log(times["B"][r] / times["A"][r]) for r in sorted(times["A"]) if r in times["B"]]

    def prepare(self, i: int) -> Target:
        """Version i's target, connected, its data built (the set-up statements, once:
        every later run and answer reuses them)."""
        target = self.target(i)
        v = self.versions[i]
        if v not in self.prepared:
            if target.info is None:
                target.connect()
            for sql in self.workload.setup:
                try:
                    target.statement(sql, {**self.workload.settings, **self.settings})
                except QueryError as e:
                    raise UsageError(f"set-up failed on ClickHouse {v}: {e.message}") from None
            self.prepared.add(v)
        return target

    def check_settings(self) -> None:
        """The user's settings against OLD and NEW, before anything runs: one that neither
        knows is a typo, a one-line error (as ``run`` says it) — it was silently not sent, so
        ``--setting max_thread=1`` bisected the default. One that only NEW knows is newer than
        OLD: sent where known (``runner/settings.py``)."""
        if not self.settings:
            return
        infos = [self.target(i).info or self.target(i).connect() for i in (0, len(self.versions) - 1)]
        typos = known_to_none(self.settings, infos)
        if typos:
            raise infos[-1].unknown_settings(typos)

    def answer(self, i: int) -> dict[str, Any]:
        """Version i's answer."""
        from chbench.upgrade.checks import answer_of

        target = self.prepare(i)
        q = self.workload.queries[0]
        return answer_of(target, q.sql, {**self.workload.settings, **self.settings, **q.settings}, self.timeout)

    def close(self) -> None:
        close_targets(list(self.targets.values()))
