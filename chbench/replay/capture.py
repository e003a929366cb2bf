"""``chbench capture``: the queries a server really ran, from its query_log (or an
exported one), as a workload file (``workload_file.py``) or a suite of the queries that
cost the most (``suite.py``).

Rows come from a :mod:`logs` source, pass the filters (window, kind, user, database,
duration, regex, seeded sample, limit), lose their secrets (password-like settings),
optionally their literals, and are written in start-time order: a server's pages arrive
sorted; an exported file may be in any order (query_log is ordered by the *end* of a
query), so its rows are sorted on disk in runs and merged — memory stays flat however
long the log."""

from __future__ import annotations

import heapq
import json
import os
import re
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from chbench.errors import QueryError, UsageError
from chbench.replay.logs import FileLog, LogFilter, LogRow, ServerLog
from chbench.replay.statements import first_keyword, normalized_hash, redact_literals
from chbench.replay.workload_file import Header, WorkloadWriter, iso_us
from chbench.targets import Target
from chbench.targets.base import ADMIN_QUERY_PREFIX

SECRET_SETTING = re.compile(r"password|passwd|secret|token|credential|private_key|access_key|auth", re.I)
CAPTURE_MARK = "/* chbench capture */"
SORT_RUN = 50_000  # rows per sorted run of an exported file (~50 MB of Python objects)
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$", re.I)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# query_log's query_kind values, as --query-kind accepts them (18.x has no such column:
# the kind is read off the statement's first keyword)
KINDS = {"select": "Select", "with": "Select", "insert": "Insert", "create": "Create", "drop": "Drop",
         "alter": "Alter", "system": "System", "set": "Set", "show": "Show", "explain": "Explain",
         "describe": "Describe", "desc": "Describe", "rename": "Rename", "delete": "Delete", "update": "Update",
         "optimize": "Optimize", "grant": "Grant", "truncate": "Drop", "use": "Use", "kill": "KillQuery",
         "exists": "Exists"}


def when(text: str | None, now_us: int, what: str) -> int | None:
    """µs since the epoch of ``--since``/``--until``: relative (``90s``, ``15m``, ``1h``,
    ``2d``: before now) or absolute (ISO 8601, without a zone: UTC; or seconds since the
    epoch)."""
    if not text:
        return None
    try:
        return int(float(text) * 1_000_000)  # seconds since the epoch
    except ValueError:
        pass
    m = _RELATIVE.match(text.strip())
    if m:
        return now_us - int(float(m.group(1)) * _UNIT_S[m.group(2).lower()] * 1_000_000)
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{what} '{text}': not a time (give 2026-12-01T10:00:00, or 1h, 30m, 2d ago)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


@dataclass
class CaptureOptions:
    out: str
    since: str | None = None
    until: str | None = None
    databases: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=lambda: ["Select"])  # empty: every kind
    min_duration_ms: int = 0
    exclude_regex: str | None = None
    limit: int = 0
    sample: float = 1.0
    seed: int = 0
    include_failed: bool = False
    redact_literals: bool = False
    cluster: str | None = None
    from_file: str | None = None
    from_format: str | None = None
    from_timezone: str = "UTC"
    suite: int = 0  # top:N — write a suite of the N costliest normalized queries instead
    now_us: int | None = None  # the server's clock when the capture began (default --until)


@dataclass
class Captured:
    """What a capture found: the header written and the per-hash totals."""

    header: Header
    by_hash: dict[str, list[Any]]  # hash -> [count, total ms, first query, database, settings, errors]
    settings_dropped: dict[str, int]
    written: int


class Filters:
    """The row filters applied in Python (a server has applied most of them already:
    applying them again costs little and keeps both sources alike)."""

    def __init__(self, opts: CaptureOptions, log_filter: LogFilter) -> None:
        self.f = log_filter
        self.opts = opts
        try:
            self.exclude = re.compile(opts.exclude_regex) if opts.exclude_regex else None
        except re.error as e:
            raise UsageError(f"--exclude-regex '{opts.exclude_regex}': {e}") from None
        self.kinds = {k.lower() for k in log_filter.kinds}
        self.sample_bound = int(opts.sample * 2**32)
        self.salt = f"{opts.seed}:".encode()

    def keep(self, r: LogRow) -> bool:
        f = self.f
        if CAPTURE_MARK in r.query or r.query_id.startswith(ADMIN_QUERY_PREFIX):  # chbench's own bookkeeping
            return False
        if not r.initial or r.type not in f.types or not f.since_us <= r.start_us < f.until_us:
            return False
        if f.users and r.user not in f.users or f.databases and r.database not in f.databases:
            return False
        if self.kinds and (r.kind or KINDS.get(first_keyword(r.query), "")).lower() not in self.kinds:
            return False
        if r.duration_ms < f.min_duration_ms or self.exclude is not None and self.exclude.search(r.query):
            return False
        # seeded and independent of the order rows arrive in: a hash of the query id
        return self.sample_bound >= 2**32 or zlib.crc32(self.salt + r.query_id.encode()) < self.sample_bound


def record(r: LogRow, redact: bool, dropped: dict[str, int]) -> dict[str, Any]:
    """A query line (without ``t``, set once the window start is known)."""
    settings = {}
    for k, v in r.settings.items():
        if SECRET_SETTING.search(k):
            dropped[k] = dropped.get(k, 0) + 1
        else:
            settings[k] = v
    query = redact_literals(r.query) if redact else r.query
    return {"start_time": iso_us(r.start_us), "query": query, "database": r.database, "user": r.user,
            "settings": settings, "normalized_query_hash": r.hash or normalized_hash(r.query),
            "duration_ms": r.duration_ms, "read_rows": r.read_rows, "read_bytes": r.read_bytes,
            "result_rows": r.result_rows, "memory_usage": r.memory_usage, "exception_code": r.exception_code,
            "session": r.session, "query_id": r.query_id, "type": r.type,
            "query_kind": r.kind or KINDS.get(first_keyword(r.query), "Unknown")}


# -- ordering an exported file --------------------------------------------------------------
def sorted_on_disk(rows: Iterable[tuple[int, str, dict[str, Any]]], directory: str) -> Iterator[dict[str, Any]]:
    """(start µs, query id, record) in any order, yielded in (start, id) order: runs of
    ``SORT_RUN`` sorted in memory and written to temporary files, then merged."""
    runs: list[IO[str]] = []
    chunk: list[tuple[int, str, str]] = []

    def spill() -> None:
        chunk.sort()
        f = tempfile.TemporaryFile("w+", encoding="utf-8", dir=directory)  # noqa: SIM115 - closed in finally
        for us, qid, line in chunk:
            f.write(f"{us}\t{qid.replace(chr(9), ' ').replace(chr(10), ' ')}\t{line}\n")
        f.seek(0)
        runs.append(f)
        chunk.clear()

    try:
        for us, qid, rec in rows:
            chunk.append((us, qid, json.dumps(rec, ensure_ascii=False, separators=(",", ":"))))
            if len(chunk) >= SORT_RUN:
                spill()
        if not runs:  # all of it fits: no file at all
            chunk.sort()
            for us, _qid, line in chunk:
                rec = json.loads(line)
                rec["_us"] = us
                yield rec
            return
        if chunk:
            spill()

        def lines(f: IO[str]) -> Iterator[tuple[int, str, str]]:
            for line in f:
                us, qid, body = line.rstrip("\n").split("\t", 2)
                yield int(us), qid, body

        for us, _qid, body in heapq.merge(*(lines(f) for f in runs)):
            rec = json.loads(body)
            rec["_us"] = us
            yield rec
    finally:
        for f in runs:
            f.close()


def server_now(target: Target) -> int:
    """The server's clock in µs (whole seconds before 20.x): the end of a default window.
    Asked before anything else, so every later query of the capture falls after it."""
    try:
        return int(target.query_rows(f"SELECT {CAPTURE_MARK} toUnixTimestamp64Micro(now64(6))")[0][0])
    except QueryError:
        return int(target.query_rows(f"SELECT {CAPTURE_MARK} toUInt64(now()) * 1000000")[0][0])


def capture(opts: CaptureOptions, target: Target | None, source_info: dict[str, Any]) -> Captured:
    """Read, filter, order and write; returns what was captured (for the summary)."""
    now_us = opts.now_us or int(time.time() * 1_000_000)
    since = when(opts.since, now_us, "--since")
    until = when(opts.until, now_us, "--until")
    end = until if until is not None or opts.from_file else now_us  # a server's log ends now
    if since is not None and end is not None and end <= since:
        if until is None:
            raise UsageError(f"empty window: --since ({iso_us(since)}) is not before now on the server's clock "
                             f"({iso_us(end)})")
        raise UsageError(f"empty window: --until ({iso_us(until)}) is not after --since ({iso_us(since)})")
    types = ("QueryFinish", "ExceptionWhileProcessing", "ExceptionBeforeStart") if opts.include_failed \
        else ("QueryFinish",)
    kinds = [] if any(k.lower() == "all" for k in opts.kinds) else [KINDS.get(k.lower(), k) for k in opts.kinds]
    # a server's log ends where the capture began: its own queries come after
    lf = LogFilter(since_us=since or 0, until_us=until or (now_us if opts.from_file is None else 2**62),
                   types=types, users=opts.users, databases=opts.databases, kinds=kinds,
                   min_duration_ms=opts.min_duration_ms)
    filters = Filters(opts, lf)
    dropped: dict[str, int] = {}
    ordered: Iterator[dict[str, Any]]
    log: FileLog | ServerLog
    if opts.from_file:
        log = file_log = FileLog(opts.from_file, opts.from_format, opts.from_timezone)
        rows = ((r.start_us, r.query_id, record(r, opts.redact_literals, dropped))
                for r in file_log.rows() if filters.keep(r))
        ordered = sorted_on_disk(rows, os.path.dirname(os.path.abspath(opts.out)))
    else:
        assert target is not None
        log = server_log = ServerLog(target, opts.cluster, CAPTURE_MARK)
        ordered = ({**record(r, opts.redact_literals, dropped), "_us": r.start_us}
                   for r in server_log.rows(lf) if filters.keep(r))
    return _write(opts, ordered, log, lf, since, until, now_us, source_info, dropped)


def _write(opts: CaptureOptions, ordered: Iterator[dict[str, Any]], log: FileLog | ServerLog, lf: LogFilter,
           since: int | None, until: int | None, now_us: int, source_info: dict[str, Any],
           dropped: dict[str, int]) -> Captured:
    by_hash: dict[str, list[Any]] = {}
    first_us: int | None = since
    last_us = seen = 0
    with WorkloadWriter(opts.out) as writer:
        for rec in ordered:
            seen += 1
            us = rec.pop("_us")
            if first_us is None:
                first_us = us
            last_us = us
            rec = {"t": round((us - first_us) / 1e6, 6), **rec}
            h = rec["normalized_query_hash"]
            entry = by_hash.get(h)
            if entry is None:
                entry = by_hash[h] = [0, 0, None, rec["database"], rec["settings"], 0]
            entry[0] += 1
            entry[1] += rec["duration_ms"]
            if rec["exception_code"]:
                entry[5] += 1
            elif entry[2] is None:
                entry[2] = rec["query"]
                entry[3], entry[4] = rec["database"], rec["settings"]
            if not opts.suite:
                writer.add(rec)
            if opts.limit and seen >= opts.limit:
                break
        header = Header(
            source={**source_info, "server_version": source_info.get("server_version") or getattr(log, "version", None),
                    "columns_missing": log.missing, "time_precision": log.time_precision,
                    "normalized_query_hash": "chbench" if "normalized_query_hash" in log.missing else "server",
                    "captured_at": iso_us(now_us)},
            window={"since": iso_us(first_us) if first_us is not None else None,
                    "until": iso_us(until) if until is not None else
                    (iso_us(last_us) if opts.from_file else iso_us(now_us))},
            filters={"query_kind": lf.kinds or "all", "types": list(lf.types), "users": lf.users,
                     "databases": lf.databases, "min_duration_ms": lf.min_duration_ms,
                     "exclude_regex": opts.exclude_regex, "limit": opts.limit or None, "sample": opts.sample,
                     "seed": opts.seed, "is_initial_query": 1, "settings_dropped": sorted(dropped)},
            extra={"redacted_literals": opts.redact_literals})
        header.count = seen
        if not opts.suite:
            writer.finish(header)
    return Captured(header=header, by_hash=by_hash, settings_dropped=dropped, written=seen)
