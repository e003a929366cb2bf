"""``chbench read``: the same result through each read path, each in a process of its
own, against two ceilings measured in the same run — the engine's own speed (the
query with ``FORMAT Null``) and the transfer ceiling (its Native bytes drained from the
socket without decoding)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from chbench.transfer.endpoints import Endpoints
from chbench.transfer.read_paths import PATHS

DEFAULT_QUERY = "SELECT number, toString(number) AS s FROM numbers_mt({rows})"


def _spawn(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        p = subprocess.run([sys.executable, "-m", "chbench.transfer.read_worker"], input=json.dumps(spec),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"no result within {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["worker died"])[-1]
        return {"status": "failed", "error": f"worker exited {p.returncode}: {err[:300]}"}
    return json.loads(lines[-1])


def available(name: str, ep: Endpoints) -> str | None:
    proto = PATHS[name].protocol
    if proto == "embedded" and ep.embedded is None:
        return "needs the embedded target"
    if proto == "http" and ep.http is None:
        return "needs an http:// target (give one with --target)"
    if proto == "native" and ep.native is None:
        return "needs a clickhouse:// target (give one with --target)"
    return None


def run_read(ep: Endpoints, query: str, rows: int | None, names: list[str], settings: dict[str, str],
             compress: bool, repeat: int, timeout: float, log: Callable[[str], None],
             buffer_bytes: int | None = None) -> dict[str, Any]:
    base = {"query": query, "rows": rows, "http": asdict(ep.http) if ep.http else None,
            "native": asdict(ep.native) if ep.native else None, "embedded": ep.embedded,
            "password": ep.password, "ca_file": ep.ca_file, "settings": settings, "compress": compress,
            "buffer_bytes": buffer_bytes}

    def best(path: str) -> dict[str, Any]:
        runs = [_spawn({**base, "path": path}, timeout) for _ in range(repeat)]
        ok = [r for r in runs if r.get("status") == "ok"]
        return min(ok, key=lambda r: r["seconds"]) if ok else runs[0]

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
    transfer = next((c for c in ceilings if c["name"] == "ceiling: native"), None)
    entries = []
    for name in names:
        why = available(name, ep)
        if why:
            entries.append({"name": name, "status": "skipped", "reason": why})
            log(f"{name}: skipped — {why}")
            continue
        r = best(name)
        entry: dict[str, Any] = {"name": name, "description": PATHS[name].description, **r}
        if r.get("status") == "ok":
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
        else:
            log(f"{name}: {r['status']} — {r.get('error') or r.get('reason')}")
        entries.append(entry)
    return {"query": query, "rows": rows, "settings": settings, "compress": compress, "repeat": repeat,
            "buffer_bytes": buffer_bytes,
            "native_bytes": native_bytes, "ceilings": ceilings, "paths": entries}
