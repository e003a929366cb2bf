"""The one module that owns the captured-workload file (JSON lines, docs/replay.md).

The first line is the header ``{"chbench_workload": 1, "source", "window", "filters",
"count", …}``; every other line is one query, in start-time order, with ``t`` (seconds
from the window start, µs precision). The file is written streamed — queries go to a
temporary body file as they come — and assembled under its name only at the end
(header first, so ``count`` is known), so a capture stopped half-way leaves no file
that looks whole. Read streamed too: replaying a day of queries holds one line at a
time."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from chbench.errors import UsageError
from chbench.files import open_user_file
from chbench.results.store import check_directory, rename_target, write_file_atomic

FORMAT_VERSION = 1
HEADER_KEY = "chbench_workload"
def iso_us(us: int) -> str:
    """ISO-8601 UTC with microseconds, from microseconds since the epoch."""
    return datetime.fromtimestamp(us // 1_000_000, timezone.utc).replace(microsecond=us % 1_000_000).isoformat() \
        .replace("+00:00", "Z")


@dataclass
class Header:
    source: dict[str, Any]
    window: dict[str, Any]
    filters: dict[str, Any]
    count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {HEADER_KEY: FORMAT_VERSION, "source": self.source, "window": self.window, "filters": self.filters,
                "count": self.count, **self.extra}


class WorkloadWriter:
    """Query lines streamed to a temporary file beside ``path``; ``finish(header)``
    writes the header and the lines under ``path`` atomically. Leaving the ``with``
    block without ``finish`` removes the temporary files."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        directory = self.path.parent if str(self.path.parent) else Path(".")
        check_directory(path, "the workload")
        if rename_target(self.path) is None:
            raise UsageError(f"cannot write the workload to {path}: not a regular file")
        fd, self._body_path = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".body", dir=directory)
        self._body: IO[str] = os.fdopen(fd, "w", encoding="utf-8")
        self.count = 0

    def add(self, record: dict[str, Any]) -> None:
        self._body.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        self._body.write("\n")
        self.count += 1

    def finish(self, header: Header) -> None:
        header.count = self.count
        self._body.close()

        def assemble(out: IO[str]) -> None:
            out.write(json.dumps(header.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n")
            with open(self._body_path, encoding="utf-8") as body:
                while chunk := body.read(1 << 20):
                    out.write(chunk)

        try:
            write_file_atomic(self.path, assemble)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._body_path)

    def __enter__(self) -> WorkloadWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._body.closed:
            self._body.close()
        with contextlib.suppress(OSError):
            os.unlink(self._body_path)


def _open(path: str) -> IO[str]:
    return open_user_file(path, "workload file")


def read_header(path: str) -> Header:
    with _open(path) as f:
        return _header(path, f)


def _header(path: str, f: IO[str]) -> Header:
    try:
        line = f.readline()
        head = json.loads(line) if line.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        head = None
    if not isinstance(head, dict) or HEADER_KEY not in head:
        raise UsageError(f"{path} is not a chbench workload (its first line is not a "
                         f'{{"{HEADER_KEY}": 1, …}} header; make one with chbench capture)')
    if head[HEADER_KEY] != FORMAT_VERSION:
        raise UsageError(f"{path}: workload format version {head[HEADER_KEY]!r}, this chbench reads version "
                         f"{FORMAT_VERSION}")
    known = {HEADER_KEY, "source", "window", "filters", "count"}
    return Header(source=dict(head.get("source") or {}), window=dict(head.get("window") or {}),
                  filters=dict(head.get("filters") or {}), count=int(head.get("count") or 0),
                  extra={k: v for k, v in head.items() if k not in known})


def records(path: str) -> Iterator[dict[str, Any]]:
    """The query lines, one at a time, each checked; a bad line is one error naming it."""
    with _open(path) as f:
        _header(path, f)
        last_t = float("-inf")
        for number, line in enumerate(f, start=2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                t = float(rec["t"])
                if not isinstance(rec["query"], str):
                    raise TypeError("query is not a string")
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, UnicodeDecodeError) as e:
                raise UsageError(f"{path}:{number}: not a workload line ({type(e).__name__}: {e})") from None
            if t < last_t - 1e-6:
                raise UsageError(f"{path}:{number}: out of start-time order (t {t} after {last_t})")
            last_t = t
            yield rec
