"""``server@VERSION``: that ClickHouse version's own HTTP + native server, started by
chbench on free loopback ports for the command and stopped after it.

The server is the build inside the version's chDB release (``chbench/engines``), served by
the recipe of ``servers.ModernServer`` in a process of its own; only builds that can listen
(the catalog's ``listens``, measured by ``scripts/engine_catalog.py``) qualify. Queries
reach it over HTTP with the HTTP target's own code: everything an ``http://`` target does
(``load -c 8``, ``ingest``, ``clickbench stress``) works.

One server per version and data directory per command: every connection to
``server@26.9`` in this process — and in the worker processes it spawns, which find it
through an environment variable — shares it. It stops when the command exits (and by
itself if chbench is killed: it watches its parent process).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from chbench.errors import ConnectError, UsageError
from chbench.targets.base import Credentials, Target
from chbench.targets.http import HttpTarget
from chbench.targets.url import KINDS, TargetURL

_LOCK = threading.Lock()
_RUNNING: dict[tuple[str, str], Any] = {}  # (version, data dir) -> ModernServer


def _env_key(version: str, path: str | None) -> str:
    tail = "".join(c if c.isalnum() else "_" for c in f"{version}_{path or ''}")
    return f"CHBENCH_SERVER_{tail}"


def running_ports(spec: str, path: str | None) -> tuple[int, int]:
    """The HTTP and native ports of this version's server, started now if this command
    has none (``24.8`` and ``24.8.4.1`` name the same one)."""
    from chbench.engines.catalog import load_catalog

    version = load_catalog().resolve(spec).clickhouse
    key = _env_key(version, path)
    if os.environ.get(key):  # started by the process that spawned this one
        http, _, native = os.environ[key].partition(",")
        return int(http), int(native)
    with _LOCK:
        server = _RUNNING.get((version, path or ""))
        if server is None:
            server = _start(version, path)
            _RUNNING[(version, path or "")] = server
            os.environ[key] = f"{server.http_port},{server.tcp_port}"
        return int(server.http_port), int(server.tcp_port)


def server_urls(url: TargetURL) -> tuple[TargetURL, TargetURL]:
    """The HTTP and native addresses of the server ``server@VERSION`` names (started now
    if needed): for commands that reach a server through several clients (ingest, read)."""
    http, native = running_ports(url.version or "latest", url.path)
    return (TargetURL(KINDS["http"], host="127.0.0.1", port=http, database=url.database),
            TargetURL(KINDS["clickhouse"], host="127.0.0.1", port=native, database=url.database))


def _start(version: str, path: str | None) -> Any:
    from chbench.engines.store import EngineStore
    from chbench.servers import ModernServer

    store = EngineStore()
    release = store.catalog.resolve(version)
    if not release.listens:
        can = ", ".join(r.line for r in store.catalog.engines() if r.listens)
        raise UsageError(f"ClickHouse {release.clickhouse} cannot serve HTTP ({release.requirement} answers that "
                         f"SYSTEM START LISTEN is not supported): server@ works with {can}; use "
                         f"embedded@{release.line} instead")
    engine = store.find(release) or store.install(release)
    try:
        return ModernServer(site=engine.site, data_dir=path)
    except RuntimeError as e:
        raise ConnectError(f"server@{release.clickhouse} did not start: {e}") from None


class ServerEngineTarget(HttpTarget):
    """An ``http://`` target on the server chbench started for this version."""

    def __init__(self, url: TargetURL, creds: Credentials, light: bool = False) -> None:
        http, _ = server_urls(url)
        super().__init__(http, Credentials(), light)
        self.served = url.display()

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        return cls(url, creds, light)

    @property
    def label(self) -> str:
        return self.served

    def is_local(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "server": self.served}
