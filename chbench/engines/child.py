"""The engine worker: one chDB release in a process of its own, driven over a pipe.

Run as a script (``python child.py DATA_DIR [CONFIG]``) with the release's directory first on
``PYTHONPATH``. It needs only the standard library and that chDB: it never imports
chbench (whose own chDB is another ClickHouse version; two cannot share a process).

Protocol, on the process's stdin/stdout (anything the engine prints goes to stderr):

* request: one line of JSON: ``{"op": "query", "role": "measure", "sql": …, "fmt": …}``,
  ``{"op": "prepare"}`` (a timed query comes next: poll for it instead of sleeping) or
  ``{"op": "exit"}``;
* answer: one line of JSON (``ok``, ``n``, the engine's own ``elapsed`` seconds and
  read/result counters, or ``error``), then exactly ``n`` bytes of the result.

The first line the worker writes is ``{"ready": true, "version": …, "api": …}``.

Releases with ``chdb.connect`` keep one connection per role (the measuring session and
the set-up session each keep their own settings), the engine started with ``CONFIG``
(the logs ``chbench explain`` reads) where the release takes it. Older ones (chDB < 3) run each query
as a one-shot engine call on the data directory: the worker keeps each role's ``SET``s
and prepends them, and a database of its own on disk stands in for ``default`` (which
such calls do not keep between queries).
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
import time
from typing import Any

SPIN = 0.02  # after "prepare": poll the pipe for the query this long rather than sleep


class _Pipe:
    """Request lines from stdin; after ``prepare`` polled (no sleep) until one arrives."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.spin_until = 0.0

    def readline(self) -> bytes:
        while b"\n" not in self.buf:
            if time.perf_counter() < self.spin_until and not select.select([0], [], [], 0)[0]:
                continue
            chunk = os.read(0, 1 << 20)
            if not chunk:
                return b""
            self.buf += chunk
        i = self.buf.index(b"\n")
        line = bytes(self.buf[:i])
        del self.buf[: i + 1]
        return line


_SET = re.compile(r"^\s*SET\s+(\w+)\s*=\s*(.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
LEGACY_DB = "chbench"


def _bytes(r: Any) -> bytes:
    if r is None:
        return b""
    if isinstance(r, (bytes, str)):
        return r.encode() if isinstance(r, str) else r
    for name in ("bytes", "data", "get_memview"):  # .bytes() from chDB 1.0 on
        f = getattr(r, name, None)
        if f is not None:
            v = f()
            return v.encode() if isinstance(v, str) else bytes(v)
    return str(r).encode()


def _counter(r: Any, name: str) -> int | None:
    f = getattr(r, name, None)
    try:
        return int(f()) if f is not None else None
    except Exception:  # noqa: BLE001 - counters missing in older releases
        return None


class _Legacy:
    """A session for releases without chdb.connect: one-shot calls on the data directory."""

    def __init__(self, chdb: Any, path: str) -> None:
        self.chdb, self.path = chdb, path
        self.settings: dict[str, str] = {}
        self.chdb.query(f"CREATE DATABASE IF NOT EXISTS {LEGACY_DB} ENGINE = Atomic", "TabSeparated", path=path)

    def query(self, sql: str, fmt: str) -> Any:
        m = _SET.match(sql)
        if m and ";" not in m.group(2):
            name, value = m.group(1), m.group(2)
            if value.startswith("'auto("):  # back to its default: simply no longer sent
                self.settings.pop(name, None)
            else:
                self.settings[name] = value
            return None
        # one SET with every setting: chdb 1.4's one-shot calls refused some sequences of
        # several SET statements with a syntax error at a position none of them had
        prefix = f"SET {', '.join(f'{k} = {v}' for k, v in self.settings.items())}; " if self.settings else ""
        return self.chdb.query(f"{prefix}USE {LEGACY_DB}; {sql}", fmt, path=self.path)


# untimed, before the worker says it is ready: a fresh 24.8 or 25.5 process ran its fourth
# query that executes a pipeline at 2x (measured: count() over numbers(20M) 28 ms against
# 14.7, 33.6 against 16.3 — after a 2 s pause too, and after SELECT 1s, which run no
# pipeline), once; four tiny ones first took it away. A bisect's first comparison of a
# freshly started version had that one round at +130% (its 99% interval +8% … +60%).
WARM_SQL = "SELECT count() FROM numbers(10)"
WARM_QUERIES = 6


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else ""
    config = sys.argv[2] if len(sys.argv) > 2 else ""
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # the engine's own prints must not corrupt the protocol
    sys.stdout = sys.stderr
    pipe = _Pipe()
    import chdb

    sessions: dict[str, Any] = {}

    def session(role: str) -> Any:
        if role not in sessions:
            if hasattr(chdb, "connect"):
                where = path or ":memory:"
                if config:
                    try:
                        sessions[role] = chdb.connect(f"{where}{'&' if '?' in where else '?'}config-file={config}")
                        return sessions[role]
                    except Exception:  # noqa: BLE001 - a release that refuses the option runs without it
                        pass
                sessions[role] = chdb.connect(where)
            else:
                sessions[role] = _Legacy(chdb, path)
        return sessions[role]

    def answer(head: dict[str, Any], body: bytes = b"") -> None:
        head["n"] = len(body)
        proto.write(json.dumps(head).encode() + b"\n" + body)

    try:
        version = _bytes(session("measure").query("SELECT version()", "TabSeparated")).decode().strip()
        for _ in range(WARM_QUERIES):
            session("measure").query(WARM_SQL, "TabSeparated")
    except Exception as e:  # noqa: BLE001 - reported to the parent as one line
        answer({"ready": False, "error": str(e).strip().splitlines()[0] if str(e).strip() else repr(e)})
        return
    answer({"ready": True, "version": version, "api": "connect" if hasattr(chdb, "connect") else "query",
            "chdb": getattr(chdb, "__version__", None), "pid": os.getpid()})
    while True:
        line = pipe.readline()
        if not line:
            return
        pipe.spin_until = 0.0
        req = json.loads(line)
        if req.get("op") == "prepare":
            answer({"ok": True})
            pipe.spin_until = time.perf_counter() + SPIN
            continue
        if req.get("op") == "exit":
            for s in sessions.values():
                close = getattr(s, "close", None)
                if close is not None:
                    close()
            answer({"ok": True})
            return
        try:
            r = session(req.get("role", "measure")).query(req["sql"], req.get("fmt", "TabSeparated"))
        except Exception as e:  # noqa: BLE001 - the engine raises plain RuntimeErrors
            answer({"ok": False, "error": str(e)})
            continue
        head: dict[str, Any] = {"ok": True}
        if r is not None and hasattr(r, "elapsed"):
            head["elapsed"] = float(r.elapsed())
            for name in ("rows_read", "bytes_read", "storage_rows_read", "storage_bytes_read"):
                head[name] = _counter(r, name)
        answer(head, _bytes(r))


if __name__ == "__main__":
    main()
