"""Which versions a range holds, and a target for each (``chbench bisect`` and ``chbench trend``):

* **the catalog** (default) — chDB releases, each version ``embedded@VERSION`` in a
  worker process, installed on first use (only the versions a bisect visits);
* **a directory of binaries** (``--engines-from DIR``) — ``clickhouse`` builds of several
  versions, each started by chbench as a server on loopback ports (``servers.BinaryServer``)
  and reached over HTTP. A file in DIR (or one level down) is an entry when it is an
  executable named ``clickhouse`` (the multi-call binary: ``clickhouse server``) or
  ``clickhouse-server``; its version is asked from the running server
  (``SELECT version()``: 18.16's binary has no ``--version``) and remembered in
  ``DIR/.chbench-versions.json`` by the file's size and modification time.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chbench.engines.catalog import load_catalog, vkey
from chbench.errors import UsageError
from chbench.targets import Credentials, Target, make_target

NAMES = ("clickhouse", "clickhouse-server")
VERSIONS_FILE = ".chbench-versions.json"


class VersionSource(Protocol):
    skipped: list[str]  # versions in the last range asked for that the source left out

    def between(self, old: str, new: str) -> list[str]:
        """Every version from old to new (full strings, oldest first), both included."""
        ...

    def pick(self, spec: str) -> str:
        """One version, as the source spells it in full (24.8 → 24.8.4.1)."""
        ...

    def target(self, version: str) -> Target: ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


@dataclass
class CatalogSource:
    """The chDB catalog: ``embedded@VERSION`` targets (``installed``: only the versions
    installed already — no download, e.g. offline)."""

    installed: bool = False
    # with ``installed``: the catalog's versions in the range left out (not installed) —
    # a step found between two installed versions may lie at any of them
    skipped: list[str] = field(default_factory=list)

    def between(self, old: str, new: str) -> list[str]:
        catalog = load_catalog()
        a, b = catalog.resolve(old), catalog.resolve(new)
        lo, hi = sorted((vkey(a.clickhouse), vkey(b.clickhouse)))
        if lo == hi:
            raise UsageError(f"OLD and NEW are the same version ({a.clickhouse}): give two versions")
        import sys

        py = (sys.version_info[0], sys.version_info[1])
        out = [r.clickhouse for r in catalog.engines() if lo <= vkey(r.clickhouse) <= hi and r.supports(py)]
        if self.installed:
            from chbench.engines.store import EngineStore

            have = set(EngineStore().installed())
            self.skipped = [v for v in out if v not in have and v not in (a.clickhouse, b.clickhouse)]
            out = [v for v in out if v not in self.skipped]
        return out if vkey(a.clickhouse) < vkey(b.clickhouse) else list(reversed(out))

    def pick(self, spec: str) -> str:
        return load_catalog().resolve(spec).clickhouse

    def target(self, version: str) -> Target:
        return make_target(f"embedded@{version}", Credentials())

    def describe(self) -> str:
        if self.installed:
            left = f"; not installed, left out: {', '.join(self.skipped)}" if self.skipped else ""
            return f"the chDB engine catalog, installed versions only{left}"
        return "the chDB engine catalog; missing versions are installed when first used"

    def close(self) -> None:
        pass


@dataclass
class BinariesSource:
    """``--engines-from DIR``: one server per binary, started when first used."""

    directory: Path
    found: dict[str, Path] = field(default_factory=dict)  # version -> binary
    servers: list[Any] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # never any: every binary found is used

    def scan(self) -> dict[str, Path]:
        if not self.directory.is_dir():
            raise UsageError(f"--engines-from {self.directory}: not a directory")
        known = _read_versions(self.directory)
        for path in _binaries(self.directory):
            st = path.stat()
            key = f"{path.resolve()}:{st.st_size}:{int(st.st_mtime)}"
            version = known.get(key)
            if version is None:
                version = _ask_version(path)
                known[key] = version
            self.found.setdefault(version, path)
        with contextlib.suppress(OSError):
            (self.directory / VERSIONS_FILE).write_text(json.dumps(known, indent=1))
        if not self.found:
            raise UsageError(f"--engines-from {self.directory}: no clickhouse or clickhouse-server binary in it "
                             "(or one level down)")
        return self.found

    def between(self, old: str, new: str) -> list[str]:
        found = sorted(self.found or self.scan(), key=vkey)
        a, b = (self._match(found, v) for v in (old, new))
        lo, hi = sorted((vkey(a), vkey(b)))
        if lo == hi:
            raise UsageError(f"OLD and NEW are the same version ({a}): give two versions")
        out = [v for v in found if lo <= vkey(v) <= hi]
        return out if vkey(a) < vkey(b) else list(reversed(out))

    def pick(self, spec: str) -> str:
        return self._match(sorted(self.found or self.scan(), key=vkey), spec)

    def _match(self, found: list[str], spec: str) -> str:
        want = vkey(spec)
        hits = [v for v in found if vkey(v)[:len(want)] == want]
        if not hits:
            raise UsageError(f"no binary of ClickHouse {spec} in {self.directory} (it has: {', '.join(found)})")
        return hits[-1]

    def target(self, version: str) -> Target:
        from chbench.servers import BinaryServer

        server = BinaryServer(str(self.found[version]))
        self.servers.append(server)
        return make_target(server.http_url, Credentials())

    def describe(self) -> str:
        return f"binaries in {self.directory}, each started as a server on loopback ports"

    def close(self) -> None:
        for s in self.servers:
            with contextlib.suppress(Exception):
                s.stop()
        self.servers.clear()


def version_source(directory: str | None, installed: bool = False) -> VersionSource:
    return BinariesSource(Path(directory).expanduser()) if directory else CatalogSource(installed)


def _binaries(directory: Path) -> list[Path]:
    out = []
    for p in sorted([*directory.iterdir(), *(c for d in directory.iterdir() if d.is_dir() for c in d.iterdir())]):
        if p.name in NAMES and p.is_file() and os.access(p, os.X_OK):
            out.append(p)
    return out


def _read_versions(directory: Path) -> dict[str, str]:
    try:
        d = json.loads((directory / VERSIONS_FILE).read_text())
        return {str(k): str(v) for k, v in d.items()} if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def _ask_version(path: Path) -> str:
    from chbench.servers import BinaryServer

    try:
        server = BinaryServer(str(path))
    except RuntimeError as e:
        raise UsageError(f"{path}: did not start as a server: {e}") from None
    try:
        target = make_target(server.http_url, Credentials())
        try:
            return target.connect().version
        finally:
            target.close()
    finally:
        server.stop()
