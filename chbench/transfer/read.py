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

from chbench.transfer.endpoints import Endpoints
from chbench.transfer.read_paths import PATHS

DEFAULT_QUERY = "SELECT number, toString(number) AS s FROM numbers_mt({rows})"


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
    repeat: int = 1  # runs per path, the best kept
    timeout: float = 600.0  # per path
    buffer_bytes: int | None = None


def _ceilings(best: Callable[[str], dict[str, Any]], rows: int | None,
              log: Callable[[str], None]) -> tuple[list[dict[str, Any]], int | None]:
    """The engine alone (FORMAT Null) and the transfer (Native bytes drained): rows/s,
    and the result's Native size."""
    ceilings = []
    native_bytes = None
    for which, what in (("null", "engine alone: FORMAT Null"), ("native", "transfer: Native bytes drained, undecoded")):
        r = best(f"ceiling-{which}")
        if r.get("status") != "ok":
            log(f"ceiling {which}: {r.get('error') or r.get('reason')}")
            continue
        if which == "native":
            native_bytes = r["bytes"] or None
        n = rows or 0
        ceilings.append({"name": f"ceiling: {which}", "what": what, "seconds": r["seconds"],
                         "rows_per_s": n / r["seconds"] if r["seconds"] and n else None, "bytes": r.get("bytes")})
        log(f"ceiling {which}: {r['seconds']:.3f} s")
    for c in ceilings:
        c["mb_per_s"] = (native_bytes / 1e6) / c["seconds"] if native_bytes and c["seconds"] else None
    return ceilings, native_bytes


def _entry(name: str, r: dict[str, Any], rows: int | None, native_bytes: int | None,
           transfer: dict[str, Any] | None, log: Callable[[str], None]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "description": PATHS[name].description, **r}
    if r.get("status") != "ok":
        log(f"{name}: {r['status']} — {r.get('error') or r.get('reason')}")
        return entry
    s = r["seconds"]
    entry.update(
        rows_per_s=r["rows"] / s if s else None,
        mb_per_s=(native_bytes / 1e6) / s if native_bytes and s else None,
        peak_rss_mb=r["peak_rss"] / 2**20, rss_growth_mb=(r["peak_rss"] - r["base_rss"]) / 2**20,
        rows_ok=rows is None or r["rows"] == rows,
    )
    if transfer and transfer.get("rows_per_s") and entry["rows_per_s"]:
        entry["of_transfer_ceiling"] = entry["rows_per_s"] / transfer["rows_per_s"]
    log(f"{name}: {entry['rows_per_s']:,.0f} rows/s in {s:.3f} s, peak RSS {entry['peak_rss_mb']:.0f} MB"
        + ("" if entry["rows_ok"] else f" — WRONG ROW COUNT {r['rows']:,}"))
    return entry


def run_read(ep: Endpoints, names: list[str], opts: ReadOptions, log: Callable[[str], None],
             partial: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Ceilings, then every path; ``partial`` sees the result after each one (so Ctrl-C
    keeps what was read)."""
    base = {"query": opts.query, "rows": opts.rows, "http": asdict(ep.http) if ep.http else None,
            "native": asdict(ep.native) if ep.native else None, "chdb_path": ep.embedded,
            "password": ep.password, "ca_file": ep.ca_file, "settings": opts.settings, "compress": opts.compress,
            "buffer_bytes": opts.buffer_bytes}

    def best(path: str) -> dict[str, Any]:
        runs = [_spawn({**base, "path": path}, opts.timeout) for _ in range(opts.repeat)]
        ok = [r for r in runs if r.get("status") == "ok"]
        return min(ok, key=lambda r: r["seconds"]) if ok else runs[0]

    result: dict[str, Any] = {"query": opts.query, "rows": opts.rows, "settings": opts.settings,
                              "compress": opts.compress, "repeat": opts.repeat, "buffer_bytes": opts.buffer_bytes,
                              "native_bytes": None, "ceilings": [], "paths": []}
    result["ceilings"], result["native_bytes"] = _ceilings(best, opts.rows, log)
    transfer = next((c for c in result["ceilings"] if c["name"] == "ceiling: native"), None)
    for name in names:
        why = ep.missing(PATHS[name].protocol)
        if why:
            result["paths"].append({"name": name, "status": "skipped", "reason": why})
            log(f"{name}: skipped — {why}")
        else:
            result["paths"].append(_entry(name, best(name), opts.rows, result["native_bytes"], transfer, log))
        if partial:
            partial(result)
    return result
