"""Executing a plan.

Order: warm-up runs first, then rounds. A round runs every unfinished query once on
each side (interleaved: q1 q2 … qn, then again), alternating the sides run by run
(A B, then B A) so slow drift of the machine spreads over every query and both sides.
The fixed calibration query (the drift guard) runs on each side after each of the first
rounds, then at most once a second.

A query stops when its median's 95% interval is within ±2% (at least ``min_runs``
runs), when ``max_time_per_query`` is spent, or after ``--iterations`` runs.
The results file is rewritten atomically after every query and at every stop.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_SERVER_LOST, QueryError, ServerLost
from chbench.plan import Plan, SidePlan
from chbench.results.store import write_atomic
from chbench.runner.environment import document_header, now_iso
from chbench.runner.progress import Progress
from chbench.stats.summary import relative_ci_halfwidth
from chbench.targets import Sample, ServerInfo, Target
from chbench.workload import CALIBRATION_FALLBACK_SQL, CALIBRATION_SQL, prepare_sql

SAVE_EVERY_S = 1.0
# The calibration query runs after a round, at most once a second: often enough to
# follow the machine, rarely enough not to disturb suites of very short queries.
CALIBRATION_EVERY_S = 1.0
CALIBRATION_MIN = 5  # but after each of the first rounds, so every run has a few
MAX_ERRORS = 3  # a query side that failed this often (or twice with no success) stops


@dataclass
class QueryState:
    name: str
    entry: dict[str, Any]  # the JSON entry in the results document
    sides: list[str]
    done: dict[str, bool] = field(default_factory=dict)
    ok_times: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    spent_s: float = 0.0

    def finished(self) -> bool:
        return all(self.done.get(s, False) for s in self.sides)


@dataclass
class RunOutcome:
    doc: dict[str, Any]
    exit_code: int
    message: str | None = None


def settings_to_send(side: SidePlan, info: ServerInfo, plan: Plan) -> tuple[dict[str, str], list[str], list[str]]:
    """The settings this side sends, the ones the server does not know, and notes."""
    wanted: dict[str, str] = {"use_query_cache": "0"}
    notes: list[str] = []
    if not plan.allow_writes:
        current = info.settings.get("readonly", "0")
        if current in ("0", ""):
            wanted["readonly"] = "2"
        else:
            notes.append(f"user is already readonly={current}")
    if plan.max_threads is not None:
        wanted["max_threads"] = str(plan.max_threads)
    if plan.server_metrics:
        wanted["log_queries"] = "1"
    if plan.timeout:
        wanted["max_execution_time"] = str(max(1, int(round(plan.timeout))))
    wanted.update(side.settings)
    sent = {k: v for k, v in wanted.items() if info.knows(k)}
    unsupported = sorted(k for k in wanted if not info.knows(k))
    return sent, unsupported, notes


class Runner:
    def __init__(self, plan: Plan, out: str | None, progress: Progress) -> None:
        self.plan = plan
        self.out = out
        self.progress = progress
        self.doc: dict[str, Any] = {}
        self.sent: dict[str, dict[str, str]] = {}
        self.last_save = 0.0
        self.run_token = uuid.uuid4().hex[:8]
        self.counter = 0

    # -- results document ----------------------------------------------------------------
    def save(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.out or (not force and now - self.last_save < SAVE_EVERY_S):
            return
        self.doc["meta"]["ended_at"] = now_iso()
        write_atomic(self.out, self.doc)
        self.last_save = time.monotonic()

    def _init_doc(self, infos: dict[str, ServerInfo]) -> None:
        plan = self.plan
        targets = []
        for side in plan.sides:
            info = infos[side.id]
            sent, unsupported, notes = settings_to_send(side, info, plan)
            self.sent[side.id] = sent
            targets.append(
                {
                    "id": side.id,
                    **side.target.describe(),
                    "label": side.label or side.target.url,
                    "server_version": info.version,
                    "capabilities": {"query_log": info.query_log, "settings_known": len(info.settings)},
                    "settings_requested": dict(side.settings),
                    "settings_sent": sent,
                    "unsupported_settings": unsupported,
                    "scale": side.scale,
                    "notes": info.notes + notes,
                }
            )
        self.doc = document_header("run")
        self.doc["meta"].update({
            "mode": "side-by-side" if plan.side_by_side else "single",
            "options": {
                "warmup": plan.warmup,
                "iterations": plan.iterations,
                "adaptive": plan.iterations is None,
                "min_runs": plan.min_runs,
                "target_precision": plan.target_precision,
                "max_time_per_query": plan.max_time_per_query,
                "timeout": plan.timeout,
                "keep_format": plan.keep_format,
                "allow_writes": plan.allow_writes,
                "interleave": plan.interleave,
                "server_metrics": plan.server_metrics,
            },
        })
        self.doc.update({"targets": targets, "queries": [], "calibration": []})

    # -- execution -------------------------------------------------------------------------
    def _execute(self, side: SidePlan, sql_sent: str, round_no: int, warmup: bool) -> Sample:
        self.counter += 1
        qid = f"chbench-{self.run_token}-{self.counter}"
        started = time.time()
        gc.disable()  # no cyclic-GC pause inside the timed region
        try:
            s = side.target.execute(sql_sent, self.sent[side.id], qid, self.plan.timeout)
        except QueryError as e:
            s = Sample(query_id=qid, error=e.as_dict())
        finally:
            gc.enable()
        s.target, s.round, s.warmup, s.started_at = side.id, round_no, warmup, round(started, 3)
        return s

    def run(self) -> RunOutcome:
        plan = self.plan
        infos: dict[str, ServerInfo] = {}
        connected: dict[int, ServerInfo] = {}
        for side in plan.sides:
            key = id(side.target)
            if key not in connected:
                connected[key] = side.target.connect()
            infos[side.id] = connected[key]
        self._init_doc(infos)
        by_id = {s.id: s for s in plan.sides}
        states: list[QueryState] = []
        for name in plan.query_names():
            sides = [s.id for s in plan.sides if s.query(name) is not None]
            first = by_id[sides[0]].query(name)
            assert first is not None
            entry: dict[str, Any] = {
                "name": name,
                "sql": first.sql,
                "sql_sent": prepare_sql(first.sql, plan.keep_format),
                "target": sides[0] if len(sides) == 1 else sides,
                "sides": {},
                "samples": [],
                "errors": 0,
            }
            for sid in sides:
                q = by_id[sid].query(name)
                assert q is not None
                entry["sides"][sid] = {"sql": q.sql, "sql_sent": prepare_sql(q.sql, plan.keep_format)}
            self.doc["queries"].append(entry)
            st = QueryState(name=name, entry=entry, sides=sides)
            for sid in sides:
                st.done[sid] = False
                st.ok_times[sid] = []
                st.errors[sid] = 0
            states.append(st)
        calib: dict[str, dict[str, Any]] = {}
        if plan.calibration:
            for side in plan.sides:
                c = {"target": side.id, "sql": CALIBRATION_SQL, "samples": []}
                calib[side.id] = c
                self.doc["calibration"].append(c)
        self.save(force=True)
        self.progress.start(states, plan)
        try:
            self._warmup(states, by_id)
            self._rounds(states, by_id, calib)
        except KeyboardInterrupt:
            return self._stop("interrupted", EXIT_INTERRUPTED, "interrupted")
        except ServerLost as e:
            return self._stop("server_lost", EXIT_SERVER_LOST, str(e))
        finally:
            self.progress.stop()
        if plan.server_metrics:
            try:
                self._attach_server_metrics()
            except KeyboardInterrupt:
                return self._stop("interrupted", EXIT_INTERRUPTED, "interrupted while fetching server metrics")
            except (ServerLost, QueryError) as e:
                self.doc["meta"]["server_metrics_error"] = str(e)
        failed = [st.name for st in states if st.entry["errors"]]
        self.doc["status"] = "complete"
        self.save(force=True)
        if failed:
            return RunOutcome(self.doc, EXIT_FINDING, f"{len(failed)} quer{'y' if len(failed) == 1 else 'ies'} failed: "
                              + ", ".join(failed[:5]) + (" …" if len(failed) > 5 else ""))
        return RunOutcome(self.doc, EXIT_OK)

    def _stop(self, status: str, code: int, message: str) -> RunOutcome:
        self.doc["status"] = status
        self.doc["meta"]["stop_reason"] = message
        self.save(force=True)
        return RunOutcome(self.doc, code, message)

    def _record(self, st: QueryState, s: Sample) -> None:
        st.entry["samples"].append(s.to_json())
        if s.warmup:
            return
        if s.error:
            st.errors[s.target] += 1
            st.entry["errors"] += 1
        elif s.client_ms is not None:
            st.ok_times[s.target].append(s.client_ms)
        if s.client_ms is not None:
            st.spent_s += s.client_ms / 1000.0

    def _update_done(self, st: QueryState) -> None:
        """Sides stop together (so side-by-side runs stay paired), except a side that
        keeps failing, which stops on its own."""
        plan = self.plan
        live = []
        for sid in st.sides:
            errs = st.errors[sid]
            if errs >= MAX_ERRORS or (errs >= 2 and not st.ok_times[sid]):
                st.done[sid] = True
            if not st.done[sid]:
                live.append(sid)
        if not live:
            return
        runs = {sid: len(st.ok_times[sid]) + st.errors[sid] for sid in live}
        if plan.iterations is not None:
            finished = all(runs[sid] >= plan.iterations for sid in live)
        else:
            enough = all(len(st.ok_times[sid]) >= plan.min_runs for sid in live)
            precise = all(relative_ci_halfwidth(st.ok_times[sid]) <= plan.target_precision for sid in live)
            out_of_time = st.spent_s >= plan.max_time_per_query and all(runs[sid] >= plan.min_runs for sid in live)
            finished = (enough and precise) or out_of_time or any(runs[sid] >= plan.max_runs for sid in live)
        if finished:
            for sid in live:
                st.done[sid] = True

    def _warmup(self, states: list[QueryState], by_id: dict[str, SidePlan]) -> None:
        for _ in range(self.plan.warmup):
            for st in states:
                for sid in st.sides:
                    s = self._execute(by_id[sid], st.entry["sides"][sid]["sql_sent"], -1, True)
                    self._record(st, s)
                    self.progress.sample(st, s)
                self.save()

    def _rounds(self, states: list[QueryState], by_id: dict[str, SidePlan], calib: dict[str, dict[str, Any]]) -> None:
        plan = self.plan
        round_no = 0
        last_calibration = -math.inf
        pending = list(states)
        while pending:
            batch = pending if plan.interleave else pending[:1]
            for st in batch:
                order = st.sides if round_no % 2 == 0 else list(reversed(st.sides))
                for sid in order:
                    if st.done[sid]:
                        continue
                    s = self._execute(by_id[sid], st.entry["sides"][sid]["sql_sent"], round_no, False)
                    self._record(st, s)
                    self.progress.sample(st, s)
                self._update_done(st)
                if st.finished():
                    self.progress.query_done(st)
                    self.save(force=True)
                else:
                    self.save()
            few = any(len(c["samples"]) < CALIBRATION_MIN for c in calib.values())
            if calib and (few or time.monotonic() - last_calibration >= CALIBRATION_EVERY_S):
                for sid, c in calib.items():
                    s = self._execute(by_id[sid], prepare_sql(c["sql"]), round_no, False)
                    if s.error and not c["samples"] and c["sql"] != CALIBRATION_FALLBACK_SQL:
                        c["sql"] = CALIBRATION_FALLBACK_SQL  # e.g. no numbers_mt on 18.x
                        s = self._execute(by_id[sid], prepare_sql(c["sql"]), round_no, False)
                    c["samples"].append(s.to_json())
                last_calibration = time.monotonic()
            pending = [st for st in pending if not st.finished()]
            round_no += 1
            self.save()

    def _attach_server_metrics(self) -> None:
        """One batch of query_log look-ups per distinct target (sides may share one)."""
        sides_of: dict[int, tuple[Target, set[str]]] = {}
        for side in self.plan.sides:
            sides_of.setdefault(id(side.target), (side.target, set()))[1].add(side.id)
        fetched: dict[str, dict[str, Any]] = {}
        for target, side_ids in sides_of.values():
            ids = [s["query_id"] for q in self.doc["queries"] for s in q["samples"] if s["target"] in side_ids]
            try:
                for i in range(0, len(ids), 2000):
                    fetched.update(target.fetch_server_metrics(ids[i : i + 2000]))
            except QueryError as e:
                self.doc["meta"].setdefault("server_metrics_notes", []).append(f"{target.url}: {e.message}")
        for q in self.doc["queries"]:
            for s in q["samples"]:
                m = fetched.get(s["query_id"])
                if m is not None:
                    s["server_metrics"] = m
                    if s.get("server_ms") is None:
                        s["server_ms"] = float(m["query_duration_ms"])
                        s["server_ms_source"] = "query_log"


def run_plan(plan: Plan, out: str | None, progress: Progress) -> RunOutcome:
    return Runner(plan, out, progress).run()


def close_targets(targets: list[Target]) -> None:
    for t in {id(t): t for t in targets}.values():
        with contextlib.suppress(Exception):  # closing is best effort
            t.close()
