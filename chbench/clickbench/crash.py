"""Crash recovery under load: kill -9 a server in the middle of a synthetic load,
restart it, check what survived, resume, and compare with an uninterrupted load.

Only for a server chbench starts itself (the 26.9 server from the chDB wheel,
``chbench/servers.py``): nobody else's server gets killed.

Each batch is one ``INSERT … SELECT`` of rows ``start … start+count-1`` carrying an
``insert_deduplication_token``; the table has a ``non_replicated_deduplication_window``.
Synthetic rows have one distinct ``EventTime`` second each, in row order, so the rows
of every batch can be counted after the crash: each batch must be complete or absent
(none partial), every acknowledged batch complete (none lost), no batch twice (none
duplicated). Then every batch is sent again with its token — the acknowledged ones and
the one in flight when the server died (which may have been committed) must be
deduplicated, the rest land — and the table must equal the uninterrupted load: same
count, same ``sum(cityHash64(*))``.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chbench.clickbench.loading import batch_token, create_table, insert_batch, synthetic_batches, table_rows
from chbench.clickbench.synthetic import JULY_2013_UTC, JULY_SECONDS
from chbench.errors import QueryError, ServerLost, UsageError
from chbench.targets import Credentials, Target, make_target

REFERENCE_TABLE = "hits_reference"
TABLE = "hits"


def table_checksum(target: Target, table: str) -> tuple[int, str]:
    r = target.query_rows(f"SELECT count(), sum(cityHash64(*)) FROM {table}")[0]
    return int(r[0]), f"{int(r[1]):016x}"


def batch_counts(target: Target, table: str, total: int, batches: list[tuple[int, int]]) -> list[int]:
    """Rows of each batch now in the table, told apart by their EventTime seconds."""
    def ts(k: int) -> int:
        return JULY_2013_UTC + (k * JULY_SECONDS) // total

    parts = [f"countIf(toUInt32(EventTime) BETWEEN {ts(s)} AND {ts(s + c - 1)})" for s, c in batches]
    return [int(v) for v in target.query_rows(f"SELECT {', '.join(parts)} FROM {table}")[0]]


def _connect(url: str) -> Target:
    t = make_target(url, Credentials())
    t.connect()
    return t


def run_cycles(rows: int, cycles: int, seed: int, batch_rows: int,
               log: Callable[[str], None], on_cycle: Callable[[dict[str, Any]], None] | None = None,
               ) -> dict[str, Any]:
    if rows > JULY_SECONDS:
        raise UsageError(f"crash-test tells batches apart by their EventTime seconds: at most {JULY_SECONDS:,} rows")
    from chbench.servers import ModernServer

    batches = synthetic_batches(rows, batch_rows)
    server = ModernServer()
    try:
        target = _connect(server.http_url)
        log(f"server {target.info.version if target.info else '?'} started at {server.http_url}; "
            f"uninterrupted reference load of {rows:,} rows")
        create_table(target, replace=True, table=REFERENCE_TABLE)
        t0 = time.perf_counter()
        for s, c in batches:
            insert_batch(target, seed, rows, s, c, REFERENCE_TABLE)
        load_seconds = time.perf_counter() - t0
        reference = table_checksum(target, REFERENCE_TABLE)
        log(f"reference: {reference[0]:,} rows, checksum {reference[1]}, {load_seconds:.1f} s")
        rng = random.Random(seed)
        results: list[dict[str, Any]] = []
        for cycle in range(1, cycles + 1):
            target, result = _cycle(server, target, Load(rows, seed, batches), cycle,
                                    rng.uniform(0.15, 0.85) * load_seconds, reference)
            results.append(result)
            log(_cycle_line(result, len(batches)))
            if on_cycle:
                on_cycle(result)
        target.close()
        return {"rows": rows, "batch_rows": batch_rows, "batches": len(batches), "seed": seed,
                "server_version": target.info.version if target.info else None,
                "reference": {"rows": reference[0], "checksum": reference[1], "load_seconds": load_seconds},
                "cycles": results, "ok": all(r["ok"] for r in results)}
    finally:
        server.stop()


@dataclass
class Load:
    rows: int
    seed: int
    batches: list[tuple[int, int]]


def _interrupted_load(server: Any, target: Target, load: Load, kill_at: float) -> tuple[list[int], int | None]:
    """Load with tokens and kill -9 the server after ``kill_at`` seconds: the batches
    acknowledged, and the one in flight when it died."""
    acked: list[int] = []
    state: dict[str, Any] = {"inflight": None, "error": None}

    def run() -> None:
        try:
            for b, (s, c) in enumerate(load.batches):
                state["inflight"] = b
                insert_batch(target, load.seed, load.rows, s, c, TABLE)
                acked.append(b)
                state["inflight"] = None
        except (ServerLost, QueryError) as e:
            state["error"] = str(e)

    loader = threading.Thread(target=run, daemon=True)
    loader.start()
    time.sleep(kill_at)
    server.kill()
    loader.join(60)
    return acked, state["inflight"]


def _cycle(server: Any, target: Target, load: Load, cycle: int, kill_at: float,
           reference: tuple[int, str]) -> tuple[Target, dict[str, Any]]:
    """One kill -9 cycle: load, kill, restart, check what survived, resume, compare."""
    target.command(f"DROP TABLE IF EXISTS {TABLE}")
    create_table(target, replace=True, table=TABLE)
    acked, inflight = _interrupted_load(server, target, load, kill_at)
    server.restart()
    target.close()
    target = _connect(server.http_url)
    counts = batch_counts(target, TABLE, load.rows, load.batches)
    problems = []
    for b, ((_, c), n) in enumerate(zip(load.batches, counts, strict=True)):
        if b in acked and n != c:
            problems.append(f"batch {b} acknowledged but holds {n} of {c} rows")
        elif n not in (0, c):
            problems.append(f"batch {b} holds {n} rows, expected 0 or {c}")
    committed_unacked = [b for b, ((_, c), n) in enumerate(zip(load.batches, counts, strict=True))
                         if n == c and b not in acked]
    if any(b != inflight for b in committed_unacked):
        problems.append(f"batches {committed_unacked} committed without being sent")
    after_crash = table_rows(target, TABLE)
    # resume: every batch again, with the same tokens — acknowledged ones and the one
    # that may have been committed unacknowledged must be deduplicated, the rest land
    for s, c in load.batches:
        insert_batch(target, load.seed, load.rows, s, c, TABLE)
    final = table_checksum(target, TABLE)
    if final != reference:
        problems.append(f"final table {final[0]:,} rows / {final[1]} differs from the uninterrupted "
                        f"load {reference[0]:,} / {reference[1]}")
        problems += _resume_problems(target, load, inflight, counts)
    return target, {
        "cycle": cycle, "killed_after_s": round(kill_at, 3), "acked_batches": len(acked),
        "inflight_batch": inflight, "inflight_committed": inflight in committed_unacked,
        "rows_after_restart": after_crash, "final_rows": final[0], "final_checksum": final[1],
        "ok": not problems, "problems": problems,
    }


def _resume_problems(target: Target, load: Load, inflight: int | None, before: list[int]) -> list[str]:
    """Which batches the resume left wrong, each named; a batch absent after the restart
    and after the resume is looked up in the query log: taken for a duplicate, the
    server kept its token and lost its rows (a suite run here saw one cycle end one
    batch short, the one in flight at the kill lost, before the batches were named)."""
    after = batch_counts(target, TABLE, load.rows, load.batches)
    if any(n0 == n == 0 for n0, n in zip(before, after, strict=True)):
        with contextlib.suppress(QueryError):  # once, before the lookups (_deduplicated)
            target.command("SYSTEM FLUSH LOGS")
    out = []
    for b, ((s, c), n0, n) in enumerate(zip(load.batches, before, after, strict=True)):
        if n == c:
            continue
        why = f"holds {n} of {c} rows after the resume"
        if n0 == n == 0:
            why = "was absent after the restart and again after the resume"
            if _deduplicated(target, batch_token(load.seed, load.rows, s, c)):
                why = ("was absent after the restart; sent again with its token, the server took it for a duplicate "
                       "(system.query_log): it had kept the token without the rows")
            if b == inflight:
                why = "in flight at the kill, " + why
        out.append(f"batch {b} {why}")
    return out


def _deduplicated(target: Target, token: str) -> bool | None:
    """Whether the last finished insert carrying ``token`` was dropped as a duplicate
    (its ``written_rows`` counts the rows either way; ``DuplicatedInsertedBlocks`` tells)."""
    try:
        rows = target.query_rows("SELECT ProfileEvents['DuplicatedInsertedBlocks'] FROM system.query_log WHERE "
                                 f"type = 'QueryFinish' AND query_kind = 'Insert' AND position(query, '{token}') > 0 "
                                 "ORDER BY event_time_microseconds DESC LIMIT 1")
    except QueryError:
        return None
    return int(rows[0][0]) > 0 if rows else None


def _cycle_line(r: dict[str, Any], batches: int) -> str:
    inflight = r["inflight_batch"]
    return (f"cycle {r['cycle']}: killed after {r['killed_after_s']:.1f} s with {r['acked_batches']}/{batches} batches "
            "acknowledged"
            + (f", batch {inflight} in flight ({'committed' if r['inflight_committed'] else 'lost'})"
               if inflight is not None else "")
            + f"; {r['rows_after_restart']:,} rows after restart; resumed to {r['final_rows']:,} rows, checksum "
              f"{r['final_checksum']}: " + ("OK" if r["ok"] else "; ".join(r["problems"])))
