"""The server's profile of every measured run, fetched by query_id after the rounds.

Untimed and out of the timed path: one batch per few thousand query_ids, after
``SYSTEM FLUSH LOGS``. From ``system.query_log``: every ProfileEvents counter the server
recorded (a Map since 21.x, two parallel arrays — ``ProfileEvents.Names`` /
``ProfileEvents.Values`` — on 18.16), and the query's own read_rows, read_bytes,
result_rows, result_bytes, memory_usage and its threads (``peak_threads_usage`` where
the server has it, else the number of ``thread_ids``). From
``system.processors_profile_log``, where the server has it: per operator (processor
name), its instances, ``elapsed_us``, and the time it waited for input and output.

What a server lacks is said once, in the results file (``meta.explain``), never as an
error: a server without processors_profile_log gives counters only; one without
query_log gives nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from chbench.errors import QueryError, ServerLost
from chbench.targets import Target

BATCH = 2000
QUERY_LOG_COLUMNS = ("read_rows", "read_bytes", "result_rows", "result_bytes", "memory_usage", "query_duration_ms")
# what ``--server-metrics`` keeps on each sample (``server_metrics``, docs/results-schema.md):
# a view of the same profile, so query_log is read once for both
SERVER_METRICS_EVENTS = ("RealTimeMicroseconds", "UserTimeMicroseconds", "SystemTimeMicroseconds",
                         "OSCPUVirtualTimeMicroseconds", "SelectedRows", "SelectedBytes")
UNKNOWN_TABLE = 60


@dataclass
class Collected:
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)  # query_id -> profile
    counters: bool = False
    operators: bool = False
    stacks: bool = False  # sampled stacks of at least one run (trace_log)
    notes: list[str] = field(default_factory=list)
    stacks_note: str | None = None  # why there are no sampled stacks
    # every counter name this server's version has, where it can say (None: 18.16)
    known: list[str] | None = None
    threads_from: str | None = None  # the query_log column its "threads" come from

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counters": self.counters, "operators": self.operators, "stacks": self.stacks,
                               "runs": len(self.profiles), "notes": self.notes}
        if self.stacks_note:
            out["stacks_note"] = self.stacks_note
        if self.known is not None:
            out["counters_known"] = self.known
        if self.threads_from is not None:
            out["threads_from"] = self.threads_from
        return out


def _columns(target: Target, table: str) -> set[str]:
    rows = target.query_rows(f"SELECT name FROM system.columns WHERE database = 'system' AND table = '{table}'")
    return {r[0] for r in rows}


def _ids(query_ids: list[str]) -> str:
    return ",".join("'" + q.replace("'", "").replace("\\", "") + "'" for q in query_ids)


def threads_from(cols: set[str]) -> str | None:
    """How this version's query_log counts a query's threads: the peak at once (23.x on),
    or every thread that worked on it (older). Two versions that count them differently
    cannot say "ran on 3 threads instead of 1" (stats/explain.py)."""
    return ("peak_threads_usage" if "peak_threads_usage" in cols
            else "length(thread_ids)" if "thread_ids" in cols
            else "length(thread_numbers)" if "thread_numbers" in cols else None)


def _query_log_sql(cols: set[str], ids: str, since: str, key: str = "query_id") -> tuple[str, list[str]]:
    """The finished runs' counters, found by ``key`` (the target's ``log_id_column``).
    Tagged by ``log_comment`` (chDB), a run is the first query carrying its tag that is
    not a SET (untimed reads on the same session after it carry the tag too), and the
    engine's own query_id comes last: the operators are found by it."""
    if "ProfileEvents.Names" in cols:  # 18.x … 21.x: two parallel arrays
        names, values = "ProfileEvents.Names", "ProfileEvents.Values"
    else:
        names, values = "mapKeys(ProfileEvents)", "mapValues(ProfileEvents)"
    threads = threads_from(cols) or "0"
    extra: list[str] = [c for c in QUERY_LOG_COLUMNS if c in cols]
    tagged = key != "query_id"
    return (f"SELECT {key} AS run_id, arrayStringConcat({names}, ','), "
            f"arrayStringConcat(arrayMap(x -> toString(x), {values}), ','), toString({threads})"
            + "".join(f", toString({c})" for c in extra) + (", query_id" if tagged else "")
            + f" FROM system.query_log WHERE {since}type = 2 AND run_id IN ({ids})"
            + (" AND query_kind != 'Set'" if tagged and "query_kind" in cols else "")
            + (" ORDER BY event_time_microseconds LIMIT 1 BY run_id" if tagged else "")), extra


def collect(target: Target, query_ids: list[str], settle_s: float = 3.0, trace_log: str = "system.trace_log",
            profiled: bool = False, since: float | None = None) -> Collected:
    """Every run's profile that the server logged. A server logs a query just after
    answering it, so ids still missing after a flush are asked for again for at most
    ``settle_s`` seconds."""
    out = Collected()
    if not query_ids:
        return out
    # the logs are ordered by date and a production query_log is large: read only from
    # the day before the first run (the server's clock may differ from ours)
    day = (datetime.fromtimestamp(since, timezone.utc).date() - timedelta(days=1)).isoformat() if since else None
    where = f"event_date >= '{day}' AND " if day else ""
    _flush(target, out)  # a server creates its log tables at their first flush
    try:
        cols = _columns(target, "query_log")
    except (QueryError, ServerLost) as e:
        out.notes.append(f"no server profile: {getattr(e, 'message', e)}")
        return out
    if not cols:
        out.notes.append("no server profile: this server keeps no system.query_log (enable <query_log> in its config)")
        return out
    ops = bool(_columns(target, "processors_profile_log"))
    if not ops:
        out.notes.append("no operator times: this server keeps no system.processors_profile_log (counters only)")
    out.counters, out.operators = True, ops
    out.known, out.threads_from = _known(target, cols), threads_from(cols)
    key = target.log_id_column()
    missing = list(dict.fromkeys(query_ids))
    deadline = time.monotonic() + settle_s
    while missing:
        _flush(target, out)
        for i in range(0, len(missing), BATCH):
            batch = missing[i: i + BATCH]
            engine_ids = _counters(target, cols, batch, out, where, key)
            if ops:
                _operators(target, engine_ids, out, where)
        missing = [q for q in missing if q not in out.profiles]
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if missing:
        out.notes.append(f"{len(missing)} of {len(set(query_ids))} runs not in system.query_log")
    if key == "query_id":  # a tagged engine (chDB) samples no stacks: trace_log stays empty there
        _stacks(target, [q for q in dict.fromkeys(query_ids) if q in out.profiles], trace_log, profiled, out, where)
    else:
        out.stacks_note = "no sampled stacks: chDB builds never sample (a real server with <trace_log> does)"
    return out


def _known(target: Target, cols: set[str]) -> list[str] | None:
    """The counters this version has: a run's ProfileEvents leave out the ones at 0, so
    one it never logged is 0 or unknown to it — across versions the difference matters
    (18.16 against 26.9: SelectedRows, NetworkSendBytes … ranked as "new in B"). 18.16
    cannot list them (no system_events_show_zero_values): None."""
    try:
        rows = target.query_rows("SELECT name FROM system.events SETTINGS system_events_show_zero_values = 1")
    except QueryError:
        return None
    return sorted({r[0] for r in rows} | {c for c in QUERY_LOG_COLUMNS if c in cols} | {"threads"})


def _flush(target: Target, out: Collected) -> None:
    """SYSTEM FLUSH LOGS where the user may (a user without the SYSTEM privilege still
    gets what the server flushed by itself; said once)."""
    try:
        target.flush_logs()
    except QueryError as e:
        note = f"logs not flushed ({e.message.splitlines()[0][:120]}): runs the server had not written yet are missing"
        if note not in out.notes:
            out.notes.append(note)


def _stacks(target: Target, ids: list[str], table: str, profiled: bool, out: Collected, where: str) -> None:
    """Each run's sampled stacks (root first, frames joined by ';') and their counts,
    symbolised by the server: its ``symbols`` column where it fills one, else
    ``demangle(addressToSymbol())`` (allow_introspection_functions), else addresses."""
    db, _, name = table.rpartition(".")
    try:
        cols = {r[0] for r in target.query_rows(
            f"SELECT name FROM system.columns WHERE database = '{(db or 'system').replace(chr(39), '')}' "
            f"AND table = '{name.replace(chr(39), '')}'")}
    except (QueryError, ServerLost) as e:
        out.stacks_note = f"no sampled stacks: {getattr(e, 'message', e)}"
        return
    if not cols:
        out.stacks_note = (f"no sampled stacks: this server has no {table} (a real server with <trace_log> and "
                           "chbench run --profile give them; chDB builds never sample)")
        return
    frames = ["symbols"] if "symbols" in cols else []
    frames += ["arrayMap(x -> demangle(addressToSymbol(x)), trace)", "arrayMap(x -> hex(x), trace)"]
    got: dict[str, dict[str, float]] = {}
    for i, expr in enumerate(frames):
        if i == 0 and expr == "symbols":  # the server symbolised them itself (<symbolize>)
            expr = "if(empty(symbols), arrayMap(x -> hex(x), trace), symbols)"
        try:
            got = _stack_rows(target, table, expr, ids, "addressToSymbol" in expr,
                              where if "event_date" in cols else "")
        except QueryError as e:
            out.notes.append(f"stacks not symbolised that way ({e.message.splitlines()[0][:120]})")
            continue
        if got and i == len(frames) - 1:
            out.notes.append("stacks as addresses: the server does not symbolise them (allow_introspection_functions)")
        break
    for qid, stacks in got.items():
        out.profiles[qid]["stacks"] = stacks
    out.stacks = bool(got)
    if not got:
        out.stacks_note = (f"no sampled stacks in {table} for these runs"
                           + ("" if profiled else " (chbench run --profile sets the query profiler's period)"))


def _stack_rows(target: Target, table: str, frames: str, ids: list[str], introspection: bool,
                where: str) -> dict[str, dict[str, float]]:
    got: dict[str, dict[str, float]] = {}
    settings = " SETTINGS allow_introspection_functions = 1" if introspection else ""
    for i in range(0, len(ids), BATCH):
        rows = target.query_rows(
            f"SELECT query_id, arrayStringConcat(arrayReverse({frames}), ';') AS stack, count() FROM {table} "
            f"WHERE {where}query_id IN ({_ids(ids[i: i + BATCH])}) AND toString(trace_type) IN ('Real', 'CPU') "
            f"GROUP BY query_id, stack{settings}")
        for r in rows:
            got.setdefault(r[0], {})[r[1]] = float(r[2])
    return got


def _counters(target: Target, cols: set[str], ids: list[str], out: Collected, where: str,
              key: str = "query_id") -> dict[str, str]:
    """Each run's counters into its profile; the engine's query_id of each run found
    (itself, where the run is found by its query_id)."""
    sql, extra = _query_log_sql(cols, _ids(ids), where, key)
    engine_ids: dict[str, str] = {}
    for r in target.query_rows(sql):
        engine_ids[r[-1] if key != "query_id" else r[0]] = r[0]
        names, values = r[1].split(",") if r[1] else [], r[2].split(",") if r[2] else []
        counters: dict[str, float] = {n: float(v) for n, v in zip(names, values, strict=False) if n}
        threads = float(r[3])
        if threads > 0:
            counters["threads"] = threads
        for c, v in zip(extra, r[4:], strict=False):
            counters[c] = float(v)
        prof = out.profiles.setdefault(r[0], {})
        prof["counters"] = counters
    return engine_ids


def _operators(target: Target, engine_ids: dict[str, str], out: Collected, where: str) -> None:
    """Each run's operators, read by the engine's query_id (``engine_ids``: that id →
    chbench's)."""
    if not engine_ids:
        return
    rows = target.query_rows(
        "SELECT query_id, name, count(), sum(elapsed_us), sum(input_wait_elapsed_us), sum(output_wait_elapsed_us), "
        "sum(input_rows), sum(output_rows) FROM system.processors_profile_log "
        f"WHERE {where}query_id IN ({_ids(list(engine_ids))}) GROUP BY query_id, name")
    got: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        got.setdefault(engine_ids[r[0]], {})[r[1]] = {
            "n": float(r[2]), "elapsed_us": float(r[3]), "input_wait_us": float(r[4]), "output_wait_us": float(r[5]),
            "input_rows": float(r[6]), "output_rows": float(r[7])}
    for qid, ops in got.items():
        if qid in out.profiles:  # operators without the query's own row wait for it
            out.profiles[qid]["operators"] = ops


def server_metrics(profile: dict[str, Any] | None) -> dict[str, Any] | None:
    """A sample's ``server_metrics`` (``--server-metrics``) from its profile: query_log's
    duration, memory and rows, and the usual ProfileEvents (0 where the server had none)."""
    counters = (profile or {}).get("counters")
    if not counters or "query_duration_ms" not in counters:
        return None
    out: dict[str, Any] = {k: int(counters.get(k, 0)) for k in ("query_duration_ms", "memory_usage", "read_rows",
                                                                 "read_bytes")}
    out["profile_events"] = {e: int(counters.get(e, 0)) for e in SERVER_METRICS_EVENTS}
    return out
