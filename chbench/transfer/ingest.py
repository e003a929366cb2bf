"""``chbench ingest``: the same data set through each path, each into its own table,
then verified through one admin connection.

Per path: rows/s, MB/s (the data set's Native size per second — one yardstick for
every format), wall time, client CPU time, per-batch latency percentiles, retries.
Verification is always on: the row count from ``system.parts`` and the CRC32 of
``country|count|cents\\n`` lines must equal what the generator expects; a path that
lands anything else fails the run and is named.

The server's own ceiling, measured in the same run: ``INSERT INTO t SELECT * FROM``
a table that already holds the verified rows — the same rows, inserted by the server
with no client and no parsing.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from chbench.errors import QueryError, ServerLost
from chbench.stats.ranking import gap, median_time, rank, rotated, round_summary
from chbench.targets import Credentials, Target, make_target
from chbench.transfer import NOT_REACHED, NOT_REACHED_WHY
from chbench.transfer.dataset import VERIFY_SQL, Dataset, crc32_of, create_table_sql
from chbench.transfer.endpoints import Endpoints, Skip
from chbench.transfer.ingest_paths import PATHS, Context, IngestPath, PathError

TABLE_PREFIX = "chbench_ingest_"
CEILING_TRIES = 3


def admin_target(ep: Endpoints) -> Target:
    t = make_target(ep.admin_url(), Credentials(password=ep.password, ca_file=ep.ca_file))
    t.connect()
    return t


def verify(admin: Target, table: str) -> tuple[int, str, list[tuple[str, int, int]]]:
    """(rows from system.parts, CRC32, the GROUP BY rows) of one table."""
    parts = admin.query_rows(
        f"SELECT sum(rows) FROM system.parts WHERE database = currentDatabase() AND table = '{table}' AND active")
    rows = int(parts[0][0] or 0) if parts else 0
    groups = [(r[0], int(r[1]), int(r[2])) for r in admin.query_rows(VERIFY_SQL.format(table=table))]
    return rows, crc32_of(groups), groups


def _prepare_table(admin: Target, table: str) -> None:
    admin.command(f"DROP TABLE IF EXISTS {table}")
    try:
        admin.command(create_table_sql(table))
    except QueryError:  # a server without LowCardinality (18.x): the same table with String
        admin.command(create_table_sql(table).replace("LowCardinality(String)", "String"))
    if admin.info is not None and admin.info.knows("insert_deduplication_token"):
        with contextlib.suppress(QueryError):
            admin.command(f"ALTER TABLE {table} MODIFY SETTING non_replicated_deduplication_window = 1000")


def _percentiles(ms: list[float]) -> dict[str, float | None]:
    if not ms:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    p = np.percentile(ms, [50, 90, 99])
    return {"p50": float(p[0]), "p90": float(p[1]), "p99": float(p[2]), "max": float(max(ms))}


def available(cls: type[IngestPath], ep: Endpoints, admin: Target) -> str | None:
    """Why the path cannot run against these endpoints, or None."""
    why = ep.missing(cls.protocol)
    if why:
        return why
    if cls.name.startswith("connect-") and admin.info is not None and admin.info.version_tuple() < (20, 0):
        return f"clickhouse-connect does not support ClickHouse {admin.info.version} (it needs 20+)"
    return None


def run_ingest(ep: Endpoints, ds: Dataset, names: list[str], batch_sizes: list[int], async_insert: bool,
               compress: bool, log: Callable[[str], None], paths: dict[str, type[IngestPath]] | None = None,
               partial: Callable[[dict[str, Any]], None] | None = None, rounds: int = 1) -> dict[str, Any]:
    """Every path (and batch size) once a round, in a rotated order, then the server's
    ceiling; ``partial`` sees the result so far after each path (so Ctrl-C keeps it)."""
    registry = paths or PATHS
    admin = admin_target(ep)
    expected_groups, expected_crc = ds.expected()
    settings = {"async_insert": "1", "wait_for_async_insert": "1"} if async_insert else {}
    run_id = uuid.uuid4().hex[:8]
    from chbench.transfer.native_format import native_size

    size = native_size(ds)
    base = {"rows": ds.rows, "seed": ds.seed, "rounds": rounds,
            "expected": {"checksum": expected_crc, "rows": ds.rows, "groups": [list(g) for g in expected_groups]},
            "native_bytes": size, "settings": settings, "compress": compress}
    skipped: list[dict[str, Any]] = []
    units: list[tuple[type[IngestPath], int | None, bool]] = []
    for name in names:
        cls = registry[name]
        why = available(cls, ep, admin)
        if why:
            skipped.append({"name": name, "status": "skipped", "reason": why})
            log(f"{name}: skipped — {why}")
            continue
        sizes: list[int | None] = list(batch_sizes) if cls.batched else [None]
        units += [(cls, bs, len(sizes) > 1) for bs in sizes]
    runs: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(units))}
    ceilings: list[dict[str, Any] | None] = []

    def result() -> dict[str, Any]:
        entries = [_combine(runs[i], size) if runs[i] else _not_reached(*units[i]) for i in range(len(units))]
        entries += skipped
        entries.sort(key=lambda e: names.index(e.get("path", e["name"])))  # as asked (sorted() is stable)
        return {**base, "paths": entries, **_summary(entries, ceilings, ds)}

    try:
        for r in range(rounds):
            for i in rotated(list(range(len(units))), r):
                if runs[i] and runs[i][-1].get("status") != "ok":
                    continue  # skipped, failed or wrong once: said once, not sent again
                cls, bs, sweep = units[i]
                runs[i].append(_one(admin, cls, ds, ep, bs or ds.rows, sweep, settings, compress,
                                    f"chbench-{run_id}-{cls.name}-{bs}-{r}", expected_crc, size, log))
                if partial:
                    partial(result())
            ceilings.append(_ceiling(admin, [rs[-1] for rs in runs.values() if rs], ds, log))
    finally:
        admin.close()
    return result()


def _not_reached(cls: type[IngestPath], batch_size: int | None, sweep: bool) -> dict[str, Any]:
    """A path (and batch size) the run stopped before (Ctrl-C, a lost server): in the file,
    said so, rather than left out as if never asked for."""
    return {"name": cls.name if not sweep else f"{cls.name}@{batch_size}", "path": cls.name,
            "batch_size": batch_size if cls.batched else None, "status": NOT_REACHED,
            "reason": NOT_REACHED_WHY}


def _combine(runs: list[dict[str, Any]], size: int) -> dict[str, Any]:
    """One path's entry over its rounds: the round that failed or landed wrong data, else
    the median time (``tries_s`` holds each round's), batch latencies pooled."""
    last = {k: v for k, v in runs[-1].items() if not k.startswith("_")}
    if last.get("status") != "ok":
        return {**last, "round": len(runs) - 1, "tries_s": [e.get("seconds") for e in runs]}
    tries: list[float] = [e["seconds"] for e in runs]  # every round before the last was ok: it went on
    summary = round_summary(tries)
    seconds = summary["seconds"]
    return {**last, **summary, "tries_s": tries,
            "cpu_seconds": float(np.median([e["cpu_seconds"] for e in runs])),
            "rows_per_s": last["rows"] / seconds if seconds else None,
            "mb_per_s": (size / 1e6) / seconds if seconds and size > 0 else None,
            "retries": sum(e["retries"] for e in runs),
            "batch_latency_ms": _percentiles([ms for e in runs for ms in e["_batch_ms"]])}


def _summary(entries: list[dict[str, Any]], ceilings: list[dict[str, Any] | None], ds: Dataset
             ) -> dict[str, Any]:
    """The server's ceiling over the rounds, the ranking of the paths that landed their
    data every round, and the leader's share of the ceiling, paired by round
    (stats/ranking.py)."""
    per_round = [min(c["tries_s"]) if c else None for c in ceilings]
    last = next((c for c in reversed(ceilings) if c), None)
    seconds = median_time(per_round)
    ceiling = None if last is None or seconds is None else {
        "sql": last["sql"], "seconds": seconds, "rounds_s": per_round,
        "tries_s": [t for c in ceilings if c for t in c["tries_s"]], "rows_per_s": ds.rows / seconds,
        "row_count": last["row_count"], "checksum": last["checksum"]}
    ok = {e["name"]: e["tries_s"] for e in entries if e.get("status") == "ok"}
    ranking = rank(ok)
    fastest = None
    if ranking is not None:
        best = next(e for e in entries if e["name"] == ranking.leader)
        share = gap(ok[ranking.leader], per_round)  # ceiling / leader: the leader's share of the ceiling
        fastest = {"name": best["name"], "rows_per_s": best["rows_per_s"],
                   "of_ceiling": None if share is None else share.ratio,
                   "of_ceiling_ci": None if share is None or share.ci is None else list(share.ci),
                   "tied": [g.other for g in ranking.tied]}
    return {"ceiling": ceiling, "ranking": None if ranking is None else ranking.to_json(), "fastest": fastest,
            "mismatches": [e["name"] for e in entries if e.get("status") == "wrong data"]}


def _one(admin: Target, cls: type[IngestPath], ds: Dataset, ep: Endpoints, batch_size: int, sweep: bool,
         settings: dict[str, str], compress: bool, token: str, expected_crc: str, size: int,
         log: Callable[[str], None]) -> dict[str, Any]:
    name = cls.name
    table = TABLE_PREFIX + name.replace("-", "_") + (f"_{batch_size}" if sweep else "")
    _prepare_table(admin, table)
    ctx = Context(ep, table, batch_size, token, dict(settings), compress,
                  dedup=admin.info is None or admin.info.knows("insert_deduplication_token"))
    path = cls()
    entry: dict[str, Any] = {"name": name if not sweep else f"{name}@{batch_size}", "path": name, "table": table,
                             "unit": path.unit(ctx), "description": cls.description,
                             "batch_size": batch_size if cls.batched else None}
    try:
        path.prepare(ds, ctx)
        cpu0, t0 = time.process_time(), time.perf_counter()
        path.send(ds, ctx)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    except Skip as e:
        path.close()
        entry.update(status="skipped", reason=str(e))
        log(f"{name}: skipped — {e}")
        return entry
    except (PathError, QueryError, ServerLost) as e:
        path.close()
        msg = getattr(e, "message", None) or str(e)
        entry.update(status="failed", error=msg)
        log(f"{name}: failed — {msg}")
        rows, crc, _ = verify(admin, table)
        entry.update(row_count=rows, checksum=crc)
        return entry
    except Exception as e:  # noqa: BLE001 - a client library's own error: reported per path
        path.close()
        msg = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        entry.update(status="failed", error=msg)
        log(f"{name}: failed — {msg}")
        return entry
    path.close()
    rows, crc, _ = verify(admin, table)
    ok = rows == ds.rows and crc == expected_crc
    entry.update(
        status="ok" if ok else "wrong data",
        rows=ds.rows, seconds=seconds, cpu_seconds=cpu, rows_per_s=ds.rows / seconds if seconds else None,
        mb_per_s=(size / 1e6) / seconds if seconds and size > 0 else None,
        batches=len(ctx.batch_ms), retries=ctx.retries, batch_latency_ms=_percentiles(ctx.batch_ms),
        row_count=rows, checksum=crc, _batch_ms=list(ctx.batch_ms),
    )
    if not ok:
        entry["error"] = (f"landed {rows:,} rows with checksum {crc}; expected {ds.rows:,} rows, "
                          f"checksum {expected_crc}")
    log(f"{entry['name']}: {ds.rows / seconds:,.0f} rows/s in {seconds:.2f} s, checksum {crc} "
        + ("OK" if ok else f"WRONG ({entry['error']})"))
    return entry


def _ceiling(admin: Target, entries: list[dict[str, Any]], ds: Dataset, log: Callable[[str], None]
             ) -> dict[str, Any] | None:
    """INSERT … SELECT from a table verified this round into a fresh one: the server
    alone, best of a few tries (a conservative yardstick). None without such a table."""
    source = next((e["table"] for e in entries if e.get("status") == "ok"), None)
    if source is None:
        return None
    table = TABLE_PREFIX + "server_ceiling"
    times = []
    for _ in range(CEILING_TRIES):
        _prepare_table(admin, table)
        t0 = time.perf_counter()
        admin.command(f"INSERT INTO {table} SELECT * FROM {source}")
        times.append(time.perf_counter() - t0)
    rows, crc, _ = verify(admin, table)
    log(f"server ceiling (INSERT INTO … SELECT * FROM {source}, best of {CEILING_TRIES}): "
        f"{ds.rows / min(times):,.0f} rows/s in {min(times):.2f} s")
    return {"sql": f"INSERT INTO {table} SELECT * FROM {source}", "tries_s": times, "row_count": rows,
            "checksum": crc}


def drop_tables(ep: Endpoints, entries: list[dict[str, Any]]) -> None:
    admin = admin_target(ep)
    try:
        for e in entries:
            if e.get("table"):
                admin.command(f"DROP TABLE IF EXISTS {e['table']}")
        admin.command(f"DROP TABLE IF EXISTS {TABLE_PREFIX}server_ceiling")
    finally:
        admin.close()
