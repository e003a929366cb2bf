"""The sides a results file holds, ready for the statistics: per query the samples of
the compared metric (or a foreign file's summary numbers), per side the calibration
samples. One function per kind of file; ``sides_of`` picks it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from chbench.errors import UsageError
from chbench.explain.build import profile_run
from chbench.replay.analysis import Backlog, backlog_of
from chbench.results import (
    ClickHouseBenchmarkFile,
    LoadDocument,
    ReplayDocument,
    ResultsFile,
    RunDocument,
    UpgradeScriptFile,
)
from chbench.stats.compare import SideData
from chbench.stats.explain import ProfileRun
from chbench.stats.histogram import Histogram
from chbench.stats.rounds import RoundFactors, take_out
from chbench.targets.base import server_message


@dataclass
class Side:
    label: str  # what to call it in reports
    queries: dict[str, SideData] = field(default_factory=dict)  # name -> data, in file order
    calibration: list[float] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # machine-state readings during this side's run: {"client", "server", "reference": [...]}
    machine: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # performance tests: each query's test, and the tests as the run recorded them
    test_of: dict[str, str] = field(default_factory=dict)
    tests: list[dict[str, Any]] = field(default_factory=list)
    # rounds the run set aside on a busy machine (--quiet-wait): the runner's record
    set_aside: list[dict[str, Any]] = field(default_factory=list)
    # cores other processes used while each kept sample ran (the CPU timeline), where known
    kept_others: list[float] = field(default_factory=list)
    # each query's measured runs with a server profile (chbench/explain), by query name
    profiles: dict[str, list[ProfileRun]] = field(default_factory=dict)
    # what the run could collect of them: {"counters", "operators", "runs", "notes"}
    explain: dict[str, Any] = field(default_factory=dict)
    # a replay's: how far its statements waited on each other, one per replay file
    backlog: list[Backlog] = field(default_factory=list)
    # a run's server version and the user's settings: what two separate files may differ in
    configuration: dict[str, Any] = field(default_factory=dict)
    # the target's protocol (embedded, http, native): the interface its results left through
    protocol: str | None = None


@dataclass
class Sides:
    """The sides of one file, what kind of file it was, and whether it finished."""

    path: str
    format: str  # chbench | chbench-load | upgrade-script | clickhouse-benchmark
    sides: list[Side]
    status: str = "complete"
    checks: dict[str, Any] = field(default_factory=dict)  # a run file's answer/plan checks (chbench upgrade)


def sides_of(path: str, doc: ResultsFile, metric: str = "client_ms") -> Sides:
    if isinstance(doc, RunDocument):
        return Sides(path, "chbench", _run_sides(path, doc, metric), doc.status, doc.checks)
    if isinstance(doc, LoadDocument):
        return Sides(path, "chbench-load", _load_sides(path, doc, metric), doc.status)
    if isinstance(doc, ReplayDocument):
        return Sides(path, "chbench-replay", _replay_sides(path, doc, metric), doc.status)
    if isinstance(doc, UpgradeScriptFile):
        return Sides(path, doc.format, [_upgrade_script_side(path, doc)])
    if isinstance(doc, ClickHouseBenchmarkFile):
        return Sides(path, doc.format, _clickhouse_benchmark_sides(path, doc))
    kind = getattr(doc, "kind", "ClickBench")
    elsewhere = _COMPARED_BY.get(kind)
    what = "a ClickBench results file" if kind == "ClickBench" else f"a chbench '{kind}' file"
    raise UsageError(f"{path}: {what} has no queries to compare"
                     + (f": {elsewhere}" if elsewhere else " (compare takes run, load and replay files, the upgrade "
                        "script's JSON and clickhouse-benchmark's --json)"))


# where a file compare cannot read is compared (a ClickBench file read as "a chbench
# 'ClickBench' file", and nothing said where it goes, 2026-12-07)
_COMPARED_BY = {
    "ClickBench": "compare ClickBench files with 'chbench clickbench compare FILE…'",
    "clickbench": "compare ClickBench runs with 'chbench clickbench compare FILE…'",
    "ingest": "'chbench report FILE --html OUT.html' shows its paths side by side with their intervals",
    "read": "'chbench report FILE --html OUT.html' shows its paths side by side with their intervals",
}


# why a query a run stopped before (Ctrl-C, a lost server) is 'skipped' on that side: a CI
# gate does not pass on it (commands/compare.py)
NOT_REACHED = "not measured: the run stopped before it"


def not_reached(rows: list[Any]) -> list[str]:
    """The queries of a comparison's rows that a run stopped before, on either side."""
    return [r.name for r in rows if r.verdict == "skipped" and any(NOT_REACHED in why for why in r.reasons)]


def _run_sides(path: str, doc: RunDocument, metric: str) -> list[Side]:
    meta = doc.meta.to_json()
    sides = {t.id: Side(label=f"{t.id}: {t.label}", meta=meta,
                        configuration={"server_version": t.server_version, "settings": t.settings_requested,
                                       "in_process": t.capabilities.get("in_process")}, protocol=t.kind)
             for t in doc.targets}
    missing = 0
    setup_failed = {t.id: t.extra["setup_error"] for t in doc.targets if t.extra.get("setup_error")}
    for q in doc.queries:
        for sid in sides:
            per = q.measured(sid, set_aside=doc.never_quiet)
            if not per and q.sides and sid not in q.sides:
                continue
            data = SideData(sql=q.sql_sent_by(sid), skipped=q.skipped(sid))
            qs = q.sides.get(sid)
            data.error_sample = qs.failed if qs is not None else None  # its test's set-up failed here
            if not per and not data.error_sample and sid in setup_failed:  # the side's own set-up failed
                data.error_sample = f"set-up failed: {_err_text(setup_failed[sid].get('error'))}"
            if not per and not data.skipped and not data.error_sample:  # never reached: not a failure
                data.skipped = f"{NOT_REACHED} ({doc.status})" \
                    if doc.status != "complete" else "not measured in this run"
            if q.test is not None:
                sides[sid].test_of[q.name] = q.test
            by_session: dict[int, list[float]] = {}
            for s in per:
                if s.error:
                    data.errors += 1
                    data.error_sample = data.error_sample or _err_text(s.error)
                    continue
                if s.others_cores is not None:
                    sides[sid].kept_others.append(s.others_cores)
                if s.profile and s.profile.get("counters") is not None:
                    sides[sid].profiles.setdefault(q.name, []).append(profile_run(s))
                value = getattr(s, metric)
                if value is None:
                    missing += 1
                    continue
                data.times.append(float(value))
                data.keys.append((s.session or 0, s.round))
                data.starts.append(s.started_at)
                by_session.setdefault(s.session or 0, []).append(float(value))
                if s.client_ms is not None:
                    data.client_times.append(float(s.client_ms))
                if s.server_ms is not None:
                    data.server_times.append(float(s.server_ms))
            if len(by_session) > 1:
                data.sessions = [by_session[k] for k in sorted(by_session)]
            sides[sid].queries[q.name] = data
    for sid, side in sides.items():
        side.explain = dict((doc.meta.extra.get("explain") or {}).get(sid) or {})
        side.tests = doc.tests
        readings = {"client": doc.machine.get("client") or [],
                    "server": (doc.machine.get("servers") or {}).get(sid) or [],
                    "reference": doc.machine.get("reference") or []}
        side.machine = {k: v for k, v in readings.items() if v}
        if doc.machine.get("set_aside"):
            side.set_aside = [doc.machine["set_aside"]]
    for c in doc.calibration:
        if c.target in sides:
            sides[c.target].calibration = [float(s.client_ms) for s in c.samples
                                           if s.ok and s.client_ms is not None]
    if missing and not any(d.times for side in sides.values() for d in side.queries.values()):
        raise UsageError(f"{path}: no {metric} recorded (server timing needs the HTTP summary header, native "
                         "progress packets or a run with --server-metrics)")
    return list(sides.values())


def merge_sides(parts: list[Side], label: str) -> Side:
    """Several runs of one side (files of separate sessions, or replays of one workload)
    as one side: every sample kept, each file's sessions (a file without them: one
    session) kept apart."""
    side = Side(label=label, meta=parts[0].meta)
    for i, part in enumerate(parts):
        for name, d in part.queries.items():
            m = side.queries.setdefault(name, SideData(sql=d.sql, ordered=d.ordered))
            if len(d.keys) == len(d.times):  # rounds of different files are different rounds
                m.keys += [(i * FILE_SESSIONS + session, round_no) for session, round_no in d.keys]
            m.times += d.times
            m.client_times += d.client_times
            m.server_times += d.server_times
            m.errors += d.errors
            m.error_sample = m.error_sample or d.error_sample
            m.sessions += d.sessions or ([list(d.times)] if d.times else [])
            m.skipped = m.skipped or d.skipped
        side.calibration += part.calibration
        side.set_aside += part.set_aside
        side.kept_others += part.kept_others
        side.explain = side.explain or part.explain
        side.backlog += part.backlog
        for name, runs in part.profiles.items():  # rounds of different files are different rounds
            side.profiles.setdefault(name, []).extend(
                ProfileRun((i * FILE_SESSIONS + r.key[0], r.key[1]), r.counters, r.operators, r.stacks) for r in runs)
        side.test_of.update(part.test_of)
        side.tests = side.tests or part.tests
        for k, readings in part.machine.items():
            side.machine.setdefault(k, []).extend(readings)
    for d in side.queries.values():
        if d.times:  # measured in some file: one that skipped it (or stopped before it) leaves no gap
            d.skipped = None
        if len(d.sessions) < 2:
            d.sessions = []
        if len(d.keys) != len(d.times):
            d.keys = []
    shared = [{k: v for k, v in p.configuration.items() if k != "in_process"} for p in parts]
    if all(c == shared[0] for c in shared):  # one server version and settings
        side.configuration = shared[0]
        where = {p.configuration.get("in_process") for p in parts}  # None: a file from before 12-07
        if len(where) == 1 and None not in where:
            side.configuration["in_process"] = where.pop()
    if len(protocols := {p.protocol for p in parts}) == 1:
        side.protocol = protocols.pop()
    return side


FILE_SESSIONS = 10_000  # merged files: file i's sessions are numbered from i × this


def without_round_factors(side: Side) -> RoundFactors | None:
    """A separate run's times with each round's machine factor taken out
    (``stats/rounds.py``), the times as measured kept in ``raw_times``; None (the side
    as it was) when its rounds hold too few queries."""
    return take_out(side.queries)


def _not_profiled(what: str) -> dict[str, Any]:
    return {"counters": False, "operators": False, "runs": 0,
            "notes": [f"{what} collects no server profiles: measure the query with chbench run (side by side, or "
                      "before and after) for chbench explain's counters and operator times"]}


def _replay_sides(path: str, doc: ReplayDocument, metric: str) -> list[Side]:
    """One side per target of a replay; a query per normalized hash (its name and the
    hash's first digits: two hashes can share a name, and two replays of one workload
    share the hashes) — what the replay's own comparison judges (replay/analysis.py)."""
    if metric != "client_ms":
        raise UsageError(f"{path}: a replay records each query's time at the client only (use --metric client_ms)")
    meta = doc.meta.to_json()
    sides = []
    try:
        for t in doc.targets:
            side = Side(label=f"{t['id']}: {t.get('label') or t.get('url')} (replay)", meta=meta,
                        explain=_not_profiled("a replay"))
            per_hash = replay_side_data(doc.hashes, doc.samples.get(t["id"]) or {})
            side.queries = {replay_query_name(doc.hashes[i]): d for i, d in per_hash.items()}
            side.backlog = [b for b in [backlog_of(doc.samples.get(t["id"]) or {})] if b is not None]
            sides.append(side)
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise UsageError(f"{path}: malformed chbench replay results file ({type(e).__name__}: {e})") from None
    return sides


def replay_query_name(h: dict[str, Any]) -> str:
    return f"{h['name']} #{str(h['hash'])[:8]}"


def replay_side_data(hashes: list[dict[str, Any]], col: dict[str, Any], paired: bool = False) -> dict[int, SideData]:
    """Per normalized hash (by its index) one target's successful queries' own times, in
    the order they were planned. Their order is the workload's: a hash's literals and its
    neighbours change over a capture, so a trend or two clusters among them says nothing of
    the machine (``ordered`` False: not read as instability). ``paired``: each statement's
    time keyed by its index, so that a comparison pairs the same statement's sends to two
    targets of an open-loop replay (stats/paired.py) — measured against pooling and not
    used by the commands: A/A replays flagged 2.6% of their queries paired, none pooled
    (bench/replay_pairs.py, docs/replay.md)."""
    hs, codes, service = col.get("hash") or [], col.get("error_code") or [], col.get("service_ms") or []
    index, planned, late = col.get("index") or [], col.get("planned_s") or [], col.get("lateness_ms") or []
    messages = col.get("error_messages") or {}  # by error code
    out: dict[int, SideData] = {}
    for k, h in enumerate(hs):
        d = out.setdefault(int(h), SideData(sql=hashes[int(h)].get("sql"), ordered=False))
        if codes[k]:
            d.errors += 1
            d.error_sample = d.error_sample or messages.get(str(codes[k]))
            continue
        d.times.append(float(service[k]))
        if paired:
            d.keys.append((0, int(index[k])))
            d.starts.append(float(planned[k]) + float(late[k]) / 1000.0)
    for d in out.values():
        d.client_times = list(d.times)
    return out


def _load_sides(path: str, doc: LoadDocument, metric: str) -> list[Side]:
    """One side per host of the last concurrency level; each query's latencies come back
    from its histogram (bucket midpoints, within 0.4%), thinned proportionally to at
    most 5,000 values."""
    if metric != "client_ms":
        raise UsageError(f"{path}: a load run records client latency only (use --metric client_ms)")
    if not doc.levels:
        raise UsageError(f"{path}: load results file with no finished level")
    level = doc.levels[-1]
    names = doc.query_names()
    sqls = {int(q["index"]): q["sql"] for q in doc.queries}
    sides = []
    try:
        for host in level.hosts:
            side = Side(label=f"{host.label} (load, concurrency {level.concurrency})", meta=doc.meta.to_json(),
                        explain=_not_profiled("a load"))
            for q in host.queries:
                times = Histogram.from_json(q["histogram"]).expand(5000)
                random.Random(0).shuffle(times)  # run order is not kept: no false drift from sorted values
                # ... nor from several files' times one after another (--vs): no order at all
                data = SideData(sql=sqls.get(q["index"]), times=times, errors=int(q.get("errors", 0)), ordered=False)
                data.client_times = list(data.times)
                if data.errors:
                    data.error_sample = next(iter((q.get("error_messages") or {}).values()), None)
                side.queries[names[q["index"]]] = data
            sides.append(side)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: malformed chbench load results file ({type(e).__name__}: {e})") from None
    return sides


def _err_text(e: Any) -> str:
    if isinstance(e, dict):
        return f"Code {e.get('code')}: {server_message(str(e.get('message')), 300)}"
    return str(e)


def _upgrade_script_side(path: str, doc: UpgradeScriptFile) -> Side:
    meta = doc.meta
    side = Side(label=f"{meta.get('host', '?')}:{meta.get('port', '?')} ({meta.get('server_version', '?')})",
                meta=meta)
    try:
        for r in doc.results:
            d = SideData(sql=r.get("query"), errors=int(r.get("errors") or 0))
            if r.get("p50_ms") is not None:
                d.summary = {k: float(r[f"{k2}_ms"]) for k, k2 in (("min", "min"), ("median", "p50"), ("p90", "p90"),
                                                                  ("p99", "p99"), ("max", "max"))
                             if r.get(f"{k2}_ms") is not None}
                d.summary["runs"] = float(r.get("runs") or 0)
                d.summary_runs = int(r.get("runs") or 0)
            if r.get("error_sample"):
                d.error_sample = str(r["error_sample"])
            side.queries[str(r.get("id") or r.get("query"))] = d
    except (TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"{path}: malformed upgrade-script results ({e})") from None
    return side


def _clickhouse_benchmark_sides(path: str, doc: ClickHouseBenchmarkFile) -> list[Side]:
    sides = []
    for host, body in doc.hosts.items():
        pct = body.get("query_time_percentiles") or {}
        st = body.get("statistics") or {}
        try:
            summary = {"median": float(pct["50"]) * 1000.0}
            for k, key in (("min", "0"), ("p90", "90"), ("p99", "99"), ("max", "100")):
                if key in pct:
                    summary[k] = float(pct[key]) * 1000.0
            if "max" not in summary and "99.99" in pct:
                summary["max"] = float(pct["99.99"]) * 1000.0
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{path}: clickhouse-benchmark JSON without query_time_percentiles") from None
        side = Side(label=f"clickhouse-benchmark {host}", meta={"statistics": st})
        side.queries["clickhouse-benchmark (all queries)"] = SideData(
            summary=summary, errors=int(st.get("num_errors") or 0),
            summary_runs=int(st["num_queries"]) if isinstance(st.get("num_queries"), (int, float)) else None)
        sides.append(side)
    return sides
