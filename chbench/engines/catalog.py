"""Which ClickHouse versions chbench can install, and from which chDB release.

The catalog (``catalog.json`` next to this file) is data read off the real releases by
``scripts/engine_catalog.py``: each chDB / chdb-core release installed alone and asked
``SELECT version()``, with the Python versions its wheels exist for. Nothing in it is
guessed; a release that failed to install or import here is kept with its reason and
offered to nobody.

A ClickHouse version may be bundled by several releases (chdb 2.1.1 and 3.0.1 both
bundle 24.8.4.1): the one chosen is the newest release with persistent sessions
(``chdb.connect``), since one-shot releases start the engine anew for every query
(measured here: ``SELECT 1`` took 17.7 ms through chdb 2.1.1, 0.8 ms through 3.0.1).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from chbench.errors import UsageError


def vkey(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


@dataclass(frozen=True)
class Release:
    """One chDB release that bundles a ClickHouse engine (a catalog line)."""

    clickhouse: str  # full version, as SELECT version() answers: 24.8.4.1
    package: str  # chdb | chdb-core
    version: str  # the package's version
    api: str  # connect (persistent sessions) | query (one engine start per query)
    listens: bool  # can serve HTTP + native (server@VERSION)
    python: tuple[str, ...]  # Python versions with wheels (cpXY tags)
    abi3_from: str | None  # abi3 wheels: every Python from this one on
    installed_bytes: int | None
    raw: Any  # the catalog line as written

    @property
    def line(self) -> str:
        """major.minor: what users usually type."""
        return ".".join(self.clickhouse.split(".")[:2])

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def pythons(self) -> str:
        if self.abi3_from:
            return f"{self.abi3_from} and newer"
        return ", ".join(self.python) if self.python else "none listed"

    def supports(self, py: tuple[int, int]) -> bool:
        if self.abi3_from and py >= vkey(self.abi3_from)[:2]:
            return True
        return f"{py[0]}.{py[1]}" in self.python


@dataclass(frozen=True)
class Catalog:
    releases: tuple[Release, ...]
    meta: Any

    def engines(self) -> list[Release]:
        """One release per ClickHouse version: the preferred build of each, oldest first."""
        best: dict[str, Release] = {}
        for r in self.releases:
            cur = best.get(r.clickhouse)
            if cur is None or _preference(r) > _preference(cur):
                best[r.clickhouse] = r
        return sorted(best.values(), key=lambda r: vkey(r.clickhouse))

    def resolve(self, spec: str, py: tuple[int, int] | None = None) -> Release:
        """``24.8`` (newest build of that line), ``24.8.4.1`` (exact) or ``latest``;
        unknown → one line naming the nearest known versions; no wheel for this Python →
        one line naming the Pythons it has."""
        py = py or (sys.version_info[0], sys.version_info[1])
        spec = spec.strip()
        engines = self.engines()
        if spec.lower() == "latest":
            usable = [r for r in engines if r.supports(py)]
            if not usable:
                raise UsageError(f"no engine in the catalog has wheels for Python {py[0]}.{py[1]}")
            return usable[-1]
        if not re.fullmatch(r"\d+(\.\d+){1,3}", spec):
            raise UsageError(f"bad engine version '{spec}': use MAJOR.MINOR (24.8), a full version (24.8.4.1) "
                             "or latest")
        want = vkey(spec)
        matches = [r for r in engines if vkey(r.clickhouse)[:len(want)] == want]
        if not matches:
            raise UsageError(f"unknown ClickHouse version {spec}: the nearest known are "
                             f"{', '.join(self.nearest(spec))} (chbench engines list)")
        release = matches[-1]
        if not release.supports(py):
            raise UsageError(f"ClickHouse {release.clickhouse} ({release.requirement}) has wheels for Python "
                             f"{release.pythons()}, not for this Python {py[0]}.{py[1]}")
        return release

    def nearest(self, spec: str, k: int = 3) -> list[str]:
        """The known major.minor lines closest to ``spec``."""
        want = (vkey(spec) + (0, 0))[:2]
        lines = sorted({r.line for r in self.engines()}, key=vkey)

        def dist(line: str) -> tuple[int, int]:
            a = vkey(line)
            return abs((a[0] * 100 + a[1]) - (want[0] * 100 + want[1])), a[0]

        return sorted(sorted(lines, key=dist)[:k], key=vkey)

    def for_package(self, package: str, version: str) -> Release | None:
        return next((r for r in self.releases if r.package == package and r.version == version), None)


def _preference(r: Release) -> tuple[int, int, tuple[int, ...]]:
    final = re.fullmatch(r"[\d.]+", r.version) is not None  # not a pre-release (2.2.0b1)
    return (1 if r.api == "connect" else 0, int(final), vkey(r.version))


def _release(d: dict[str, Any]) -> Release | None:
    if "clickhouse" not in d or d.get("error") or d.get("engine_from"):
        return None
    return Release(clickhouse=d["clickhouse"], package=d["package"], version=d["version"], api=d.get("api", "query"),
                   listens=bool(d.get("listens")), python=tuple(d.get("python") or ()),
                   abi3_from=d.get("abi3_from"), installed_bytes=d.get("installed_bytes"), raw=d)


def parse_catalog(doc: dict[str, Any]) -> Catalog:
    releases = tuple(r for r in (_release(d) for d in doc.get("releases", [])) if r is not None)
    return Catalog(releases, {k: v for k, v in doc.items() if k != "releases"})


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    text = resources.files("chbench.engines").joinpath("catalog.json").read_text()
    return parse_catalog(json.loads(text))
