"""One read path (or ceiling) in a process of its own: ``python -m chbench.transfer.read_process``.

Reads a JSON spec on stdin (the password travels there, never on the command line),
connects, then times the path; prints one JSON line: rows delivered, seconds, the
resident memory before the query and the peak."""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
from typing import Any

from chbench.transfer.endpoints import Address, Skip
from chbench.transfer.read_paths import PATHS, ReadContext, _embedded, _raw_body, _raw_connect


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _ceiling(ctx: ReadContext, which: str) -> int:
    """Bytes drained: 'null' = FORMAT Null (the engine alone), 'native' = Native bytes undecoded."""
    from chbench.transfer.native_format import drain

    if ctx.chdb_path is not None:
        r = ctx.state["conn"].query(ctx.query, "Null" if which == "null" else "Native")
        return len(r.bytes()) if which == "native" else 0
    return drain(_raw_body(ctx, "Null" if which == "null" else "Native"))


def run(spec: dict[str, Any]) -> dict[str, Any]:
    ctx = ReadContext(
        query=spec["query"], rows=spec.get("rows"),
        http=Address(**spec["http"]) if spec.get("http") else None,
        native=Address(**spec["native"]) if spec.get("native") else None,
        chdb_path=spec.get("chdb_path"), password=spec.get("password"), ca_file=spec.get("ca_file"),
        settings=spec.get("settings") or {}, compress=bool(spec.get("compress")),
        buffer_bytes=spec.get("buffer_bytes"),
    )
    name = spec["path"]
    try:
        if name.startswith("ceiling-"):
            (_embedded if ctx.chdb_path is not None else _raw_connect)(ctx)
        else:
            PATHS[name].connect(ctx)
    except Skip as e:
        return {"status": "skipped", "reason": str(e)}
    gc.collect()
    base = _rss_bytes()
    t0 = time.perf_counter()
    out: dict[str, Any] = {"status": "ok"}
    try:
        if name.startswith("ceiling-"):
            out["bytes"] = _ceiling(ctx, name.split("-", 1)[1])
            out["rows"] = spec.get("rows")
        else:
            out["rows"] = PATHS[name].run(ctx)
    except Skip as e:
        return {"status": "skipped", "reason": str(e)}
    out["seconds"] = time.perf_counter() - t0
    out["base_rss"] = base
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def main() -> None:
    spec = json.loads(sys.stdin.read())
    try:
        result = run(spec)
    except Exception as e:  # noqa: BLE001 - reported to the parent as this path's failure
        result = {"status": "failed", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
