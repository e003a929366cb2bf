"""Where a history is kept: one interface, two backends, chosen by the ``--store`` URL.

* a local store (the default): one SQLite file under ``$XDG_DATA_HOME/chbench/``
  (``~/.local/share/chbench/history.sqlite``), or the file or directory ``--store`` names
  (``local.py``);
* a ClickHouse table: ``--store http[s]://host:8123/db`` or ``clickhouse[s]://host:9000/db``
  — the database a team already runs, readable by Grafana (``clickhouse.py``).

A backend is a module in this folder plus one line in ``BACKENDS``.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from chbench.errors import ChbenchError, UsageError
from chbench.history.record import HistoryRun
from chbench.targets.url import shown

# URL scheme → "module:class" of its backend; anything else is a local path
BACKENDS = {
    "http": "chbench.history.clickhouse:ClickHouseStore",
    "https": "chbench.history.clickhouse:ClickHouseStore",
    "clickhouse": "chbench.history.clickhouse:ClickHouseStore",
    "clickhouses": "chbench.history.clickhouse:ClickHouseStore",
}


@dataclass
class Reported:
    """A change an earlier ``history check`` reported (so the next one says what is new)."""

    query: str
    key: str
    run_id: str
    kind: str
    ratio: float
    reported_at: float


class Store(Protocol):
    """What every backend does. Writes are whole runs: a run is either stored with all
    its queries or not at all (two writers at once, a writer killed midway)."""

    location: str

    def add(self, runs: list[HistoryRun]) -> list[str]:
        """Store runs; the ids of those that were new (a run already stored is skipped)."""

    def runs(self, since: float | None = None, labels: dict[str, str] | None = None,
             samples: bool = True) -> list[HistoryRun]:
        """The stored runs, oldest first (``samples=False``: medians only, for speed)."""

    def reported(self) -> list[Reported]:
        """Every change an earlier check reported."""

    def record_reported(self, changes: list[Reported]) -> None: ...

    def close(self) -> None: ...


class NoHistoryThere(ChbenchError):
    """A backend asked to read found no history where it looked (and made none)."""


@dataclass
class NoHistory:
    """What a command that reads gets where no history is yet: no runs, and nothing made
    there — a mistyped ``--store`` used to become a new, empty store."""

    location: str

    def add(self, runs: list[HistoryRun]) -> list[str]:
        raise UsageError(f"{self.location}: no history here to add to")  # adding opens with create=True

    def runs(self, since: float | None = None, labels: dict[str, str] | None = None,
             samples: bool = True) -> list[HistoryRun]:
        return []

    def reported(self) -> list[Reported]:
        return []

    def record_reported(self, changes: list[Reported]) -> None:
        pass  # no runs, no changes

    def close(self) -> None:
        pass


def default_location() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "chbench" / "history.sqlite"


def open_store(url: str | None, password: str | None = None, ca_file: str | None = None,
               create: bool = True) -> Store:
    """The store ``url`` names (None: the local default). One that is not there yet is
    made only when ``create`` (adding runs); a command that reads gets ``NoHistory``."""
    scheme = url.split("://", 1)[0].lower() if url and "://" in url else ""
    if scheme in BACKENDS:
        module, _, name = BACKENDS[scheme].partition(":")
        cls: Any = getattr(importlib.import_module(module), name)
        try:
            store: Store = cls(url, password=password, ca_file=ca_file, create=create)
        except NoHistoryThere as e:
            return NoHistory(str(e))
        return store
    from chbench.history.local import LocalStore

    if scheme and scheme != "file":
        raise UsageError(f"--store {shown(url or '')}: not a store (a path, http(s)://host:8123/db or "
                         "clickhouse(s)://host:9000/db)")
    path = Path(url.split("://", 1)[1]) if scheme == "file" and url else Path(url) if url else default_location()
    if path.is_dir():
        path = path / "history.sqlite"
    if not create and not path.exists():
        return NoHistory(str(path))
    return LocalStore(path)


def matches(run: HistoryRun, since: float | None, labels: dict[str, str] | None) -> bool:
    if since is not None and run.started_at < since:
        return False
    return all(run.labels.get(k) == v for k, v in (labels or {}).items())
