"""``chbench read``: the same result through each read path, each in a process of its
own, against two ceilings measured in the same run — the engine's own speed (the
query with ``FORMAT Null``) and the transfer ceiling (its Native bytes drained from the
socket without decoding)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from chbench.stats.ranking import gap, rank, rotated, round_summary
from chbench.transfer import NOT_REACHED, NOT_REACHED_WHY
from chbench.transfer.endpoints import Endpoints
from chbench.transfer.read_paths import PATHS

DEFAULT_QUERY = "SELECT number, toString(number) AS s FROM numbers_mt({rows})"


def default_query(ep: Endpoints) -> str:
    """DEFAULT_QUERY, reading numbers() on a server without numbers_mt() (18.16, where
    every path failed with "Unknown table function numbers_mt")."""
    from chbench.targets import Credentials, make_target

    if ep.embedded is not None:
        return DEFAULT_QUERY
    target = make_target(ep.admin_url(), Credentials(password=ep.password, ca_file=ep.ca_file))
    try:
        target.connect()
        if target.has_table_function("numbers_mt"):
            return DEFAULT_QUERY
    finally:
        target.close()
    return DEFAULT_QUERY.replace("numbers_mt(", "numbers(")


def still_answers(ep: Endpoints) -> None:
    """After a path failed: ServerLost when the server no longer answers ``SELECT 1``, so
    the run ends as a lost server (status server_lost, exit 3, what was read kept) rather
    than going on to fail every other path in its own process and end 'complete'."""
    from chbench.errors import ConnectError, ServerLost
    from chbench.targets import Credentials, make_target
    from chbench.targets.url import Protocol

    url = ep.admin_url()
    if url.protocol is Protocol.EMBEDDED:
        return
    target = make_target(url, Credentials(password=ep.password, ca_file=ep.ca_file), light=True)
    try:
        target.open()
    except ConnectError as e:
        raise ServerLost(str(e)) from None
    finally:
        target.close()


def _spawn(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        p = subprocess.run([sys.executable, "-m", "chbench.transfer.read_process"], input=json.dumps(spec),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"no result within {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["worker died"])[-1]
        return {"status": "failed", "error": f"worker exited {p.returncode}: {err[:300]}"}
    return json.loads(lines[-1])


@dataclass
class ReadOptions:
    query: str
    rows: int | None  # expected rows (None: not known, not checked)
    settings: dict[str, str] = field(default_factory=dict)
    compress: bool = False
    repeat: int = 3  # rounds: every path once a round, the median kept
    timeout: float = 600.0  # per path
    buffer_bytes: int | None = None


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One path's (or ceiling's) runs over the rounds: the last that did not succeed, else
    the run of median time with every round's time (``tries_s``) and the highest peak
    resident memory any round reached."""
    tries = [r.get("seconds") if r.get("status") == "ok" else None for r in runs]
    bad = [r for r in runs if r.get("status") != "ok"]
    if bad:
        return {**bad[-1], "tries_s": tries}
    ordered = sorted(runs, key=lambda r: r["seconds"])
    mid = ordered[(len(ordered) - 1) // 2]
    out = {**mid, **round_summary([r["seconds"] for r in runs]), "tries_s": tries}
    if "peak_rss" in mid:
        out.update(peak_rss=max(r["peak_rss"] for r in runs),
                   base_rss=min(r["base_rss"] for r in runs))
    return out


def _ceilings(runs: dict[str, list[dict[str, Any]]], rows: int | None) -> tuple[list[dict[str, Any]], int | None]:
    """The engine alone (FORMAT Null) and the transfer (Native bytes drained): rows/s,
    and the result's Native size."""
    ceilings = []
    native_bytes = None
    for which, what in (("null", "engine alone: FORMAT Null"), ("native", "transfer: Native bytes drained, undecoded")):
        if not runs.get(f"ceiling-{which}"):
            continue
        r = _median_run(runs[f"ceiling-{which}"])
        if r.get("status") != "ok":
            continue
        if which == "native":
            native_bytes = r["bytes"] or None
        n = rows or 0
        ceilings.append({"name": f"ceiling: {which}", "what": what, "seconds": r["seconds"], "tries_s": r["tries_s"],
                         "rows_per_s": n / r["seconds"] if r["seconds"] and n else None, "bytes": r.get("bytes")})
    for c in ceilings:
        c["mb_per_s"] = (native_bytes / 1e6) / c["seconds"] if native_bytes and c["seconds"] else None
    return ceilings, native_bytes


def _entry(name: str, r: dict[str, Any], rows: int | None, native_bytes: int | None,
           transfer: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "description": PATHS[name].description, **r}
    if r.get("status") != "ok":
        return entry
    s = r["seconds"]
    entry.update(
        rows_per_s=r["rows"] / s if s else None,
        mb_per_s=(native_bytes / 1e6) / s if native_bytes and s else None,
        peak_rss_mb=r["peak_rss"] / 2**20, rss_growth_mb=(r["peak_rss"] - r["base_rss"]) / 2**20,
        rows_ok=rows is None or r["rows"] == rows,
    )
    share = gap(r["tries_s"], transfer["tries_s"]) if transfer else None  # paired by round
    if share is not None:
        entry["of_transfer_ceiling"] = share.ratio
        entry["of_transfer_ceiling_ci"] = None if share.ci is None else list(share.ci)
    return entry


def _log(name: str, r: dict[str, Any], rows: int | None, log: Callable[[str], None]) -> None:
    if r.get("status") != "ok":
        log(f"{name}: {r['status']} — {r.get('error') or r.get('reason')}")
    elif name.startswith("ceiling-"):
        log(f"{name}: {r['seconds']:.3f} s")
    else:
        log(f"{name}: {r['rows'] / r['seconds']:,.0f} rows/s in {r['seconds']:.3f} s, peak RSS "
            f"{r['peak_rss'] / 2**20:.0f} MB" + ("" if rows is None or r["rows"] == rows
                                                 else f" — WRONG ROW COUNT {r['rows']:,}"))


def run_read(ep: Endpoints, names: list[str], opts: ReadOptions, log: Callable[[str], None],
             partial: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """``opts.repeat`` rounds: the two ceilings, then every path in a rotated order, each
    in a process of its own; ``partial`` sees the result after each one (so Ctrl-C keeps
    what was read)."""
    base = {"query": opts.query, "rows": opts.rows, "http": asdict(ep.http) if ep.http else None,
            "native": asdict(ep.native) if ep.native else None, "chdb_path": ep.embedded,
            "password": ep.password, "ca_file": ep.ca_file, "settings": opts.settings, "compress": opts.compress,
            "buffer_bytes": opts.buffer_bytes}
    skipped = {n: why for n in names if (why := ep.missing(PATHS[n].protocol))}
    for n, why in skipped.items():
        log(f"{n}: skipped — {why}")
    runs: dict[str, list[dict[str, Any]]] = {}

    def result() -> dict[str, Any]:
        ceilings, native_bytes = _ceilings(runs, opts.rows)
        transfer = next((c for c in ceilings if c["name"] == "ceiling: native"), None)
        paths: list[dict[str, Any]] = [
            {"name": n, "status": "skipped", "reason": skipped[n]} if n in skipped
            else _entry(n, _median_run(runs[n]), opts.rows, native_bytes, transfer) if runs.get(n)
            else {"name": n, "status": NOT_REACHED, "reason": NOT_REACHED_WHY}  # Ctrl-C, a lost server
            for n in names]
        ranking = rank({e["name"]: e["tries_s"] for e in paths if e.get("status") == "ok" and e.get("rows_ok")})
        return {"query": opts.query, "rows": opts.rows, "settings": opts.settings, "compress": opts.compress,
                "repeat": opts.repeat, "rounds": opts.repeat, "buffer_bytes": opts.buffer_bytes,
                "native_bytes": native_bytes, "ceilings": ceilings, "paths": paths,
                "ranking": None if ranking is None else ranking.to_json()}

    live = [n for n in names if n not in skipped]
    for r in range(opts.repeat):
        for name in ["ceiling-null", "ceiling-native", *rotated(live, r)]:
            if runs.get(name) and runs[name][-1].get("status") != "ok":
                continue  # failed once: said once, not sent again
            one = _spawn({**base, "path": name}, opts.timeout)
            runs.setdefault(name, []).append(one)
            _log(name, one, opts.rows, log)
            failed = one.get("status") != "ok"
            if partial and (failed or not name.startswith("ceiling-")):
                partial(result())
            if failed:
                still_answers(ep)
    return result()
