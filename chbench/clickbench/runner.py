"""The 43 queries, ``tries`` times each: the first cold where the target allows, a
checksum of every try's result, ``None`` for a try that failed or timed out."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chbench.clickbench.checksum import analyse, checksum, mode
from chbench.core.send import fetch
from chbench.errors import QueryError, UsageError
from chbench.targets import Target, time_limit
from chbench.workload import Query

# what "cold" drops, in this order; statements a server does not know are skipped
CACHE_STATEMENTS = [
    "SYSTEM DROP MARK CACHE",
    "SYSTEM DROP UNCOMPRESSED CACHE",
    "SYSTEM DROP QUERY CACHE",
    "SYSTEM DROP FILESYSTEM CACHE",
    "SYSTEM DROP PAGE CACHE",
    "SYSTEM DROP MMAP CACHE",
    "SYSTEM DROP PRIMARY INDEX CACHE",
    "SYSTEM DROP QUERY CONDITION CACHE",
    "SYSTEM DROP INDEX MARK CACHE",
    "SYSTEM DROP INDEX UNCOMPRESSED CACHE",
]


class CacheDropper:
    """Drops the engine's caches before a cold try; learns once which statements work."""

    def __init__(self, target: Target, os_cache: bool) -> None:
        self.target = target
        self.os_cache = os_cache
        self.working: list[str] | None = None
        self.refused: dict[str, str] = {}
        if os_cache:
            if not target.is_local():
                raise UsageError("--drop-os-cache works only for a server on this machine (or the embedded engine)")
            if os.geteuid() != 0:
                raise UsageError("--drop-os-cache needs root (it writes /proc/sys/vm/drop_caches)")

    def drop(self) -> None:
        statements = CACHE_STATEMENTS if self.working is None else self.working
        working = []
        for sql in statements:
            try:
                self.target.command(sql)
                working.append(sql)
            except QueryError as e:
                self.refused[sql] = e.message[:120]
        self.working = working
        if self.os_cache:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")

    def describe(self) -> dict[str, Any]:
        return {"dropped": self.working or [], "refused": self.refused, "os_page_cache": self.os_cache}


@dataclass
class QueryOutcome:
    index: int  # 1-based, as ClickBench numbers them
    sql: str
    mode: str = "set"
    tries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> list[float | None]:
        return [t["seconds"] for t in self.tries]

    def checksums(self) -> list[str]:
        return [t["checksum"] for t in self.tries if t.get("checksum")]

    @property
    def stable(self) -> bool:
        return len(set(self.checksums())) <= 1

    @property
    def flag(self) -> str | None:
        if self.stable:
            return None
        if self.mode == "order-sensitive":
            return "order-sensitive: results differ between tries (LIMIT without a total order)"
        return "results differ between tries"

    def reference_checksum(self) -> tuple[int, str] | None:
        for t in self.tries:
            if t.get("checksum"):
                return int(t["rows"]), str(t["checksum"])
        return None

    def to_json(self) -> dict[str, Any]:
        ref = self.reference_checksum()
        return {
            "index": self.index,
            "query": self.sql,
            "mode": self.mode,
            "rows": ref[0] if ref else None,
            "checksum": ref[1] if ref else None,
            "stable": self.stable,
            "flag": self.flag,
            "tries": self.tries,
        }


def statement(sql: str) -> str:
    """The query as sent: verbatim, without its terminating ';'."""
    return sql.strip().rstrip(";").rstrip()


def run_queries(
    target: Target,
    queries: list[Query],
    tries: int,
    timeout: float | None,
    dropper: CacheDropper | None,
    on_try: Callable[[QueryOutcome, int], None] | None = None,
    only: list[int] | None = None,
) -> list[QueryOutcome]:
    """Run every query ``tries`` times. A server that stops answering raises ServerLost
    after ``on_try`` has seen every finished try (the caller saves them)."""
    info = target.info
    settings: dict[str, str] = {}
    if timeout is not None and (info is None or info.knows("max_execution_time")):
        settings["max_execution_time"] = info.time_limit(timeout) if info else time_limit(timeout)
    if info is not None and info.knows("use_query_cache"):
        settings["use_query_cache"] = "0"
    run_id = uuid.uuid4().hex[:8]
    outcomes: list[QueryOutcome] = []
    for i, query in enumerate(queries, start=1):
        if only and i not in only:
            continue
        sql = query.sql
        shape = analyse(sql)
        out = QueryOutcome(index=i, sql=sql)
        outcomes.append(out)
        for t in range(tries):
            cold = t == 0 and dropper is not None
            if cold:
                assert dropper is not None
                dropper.drop()
            qid = f"chbench-cb-{run_id}-q{i}-t{t + 1}"
            entry: dict[str, Any] = {"try": t + 1, "cold": cold, "query_id": qid, "seconds": None}
            sample, result = fetch(target, statement(sql), settings, qid, timeout)
            if result is None:
                entry["error"] = sample.error
            else:
                entry.update(
                    seconds=round((sample.client_ms or 0.0) / 1000.0, 6),
                    client_ms=sample.client_ms,
                    server_ms=sample.server_ms,
                    read_rows=sample.read_rows,
                    read_bytes=sample.read_bytes,
                    **checksum(result, shape),
                )
                out.mode = str(entry["mode"])
                if timeout is not None and sample.client_ms is not None and sample.client_ms > timeout * 1000.0:
                    entry.update(seconds=None,
                                 error={"code": 159, "message": f"took longer than --timeout {timeout:g} s"})
            if "mode" not in entry and t == 0:  # no result to read column names from
                out.mode = mode(shape, [a or e for e, a in shape.select])
            out.tries.append(entry)
            if on_try:
                on_try(out, t)
    return outcomes


def compare_with_reference(outcomes: list[QueryOutcome], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Differences from an earlier run's checksums: one entry per query that differs.
    ``counted`` is False for order-sensitive queries (listed, not failures)."""
    ref_queries = {int(q["index"]): q for q in reference.get("queries", [])}
    diffs: list[dict[str, Any]] = []
    for o in outcomes:
        r = ref_queries.get(o.index)
        mine = o.reference_checksum()
        if r is None:
            continue
        theirs = (r.get("rows"), r.get("checksum"))
        if mine is None and theirs[1] is None:
            continue
        if mine is None or theirs[1] is None:
            diffs.append({"index": o.index, "what": "failed here" if mine is None else "failed in the reference",
                          "counted": mine is None, "mode": o.mode, "here": mine, "reference": list(theirs)})
            continue
        if (mine[0], mine[1]) != (theirs[0], theirs[1]):
            what = "row count differs" if mine[0] != theirs[0] else "checksum differs"
            counted = o.mode != "order-sensitive" or mine[0] != theirs[0]
            diffs.append({"index": o.index, "what": what, "counted": counted, "mode": o.mode,
                          "here": list(mine), "reference": list(theirs)})
    return diffs


