"""The one parser of target URLs, and the registry of target kinds.

Syntax::

    embedded                      chDB in this process (the default)
    embedded:/path/dir            chDB with a persistent database directory
    embedded@24.8[:/path/dir]     that ClickHouse version's engine in a worker process
                                  (installed on first use: chbench engines)
    server@26.9[:/path/dir]       that version's own HTTP + native server, started on free
                                  loopback ports for the command and stopped after it
    http://[user@]host[:8123][/database]       HTTP interface
    https://[user@]host[:8443][/database]      HTTP over TLS (certificates verified)
    clickhouse://[user@]host[:9000][/database] native protocol
    clickhouses://[user@]host[:9440][/database] native protocol over TLS
    clickhouse://h1,h2,h3[:9000][/database]    a cluster: several hosts of one target
                                  (``chbench load`` spreads queries over them; each host may
                                  carry its own port: h1:9001,h2:9002)

Passwords never go in the URL: they come from ``CLICKHOUSE_PASSWORD`` or
``--password-file`` (``--password`` works, with a warning).

A new kind of target is a module in this folder plus one line in ``KINDS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum
from urllib.parse import unquote, urlsplit

from chbench.errors import UsageError


class Protocol(str, Enum):
    """How queries reach the engine (also the ``kind`` recorded in results files)."""

    EMBEDDED = "embedded"
    HTTP = "http"
    NATIVE = "native"
    FAKE = "fake"  # tests only: never reachable from a URL


@dataclass(frozen=True)
class Kind:
    """One registry line: a URL scheme, its protocol, default port and implementation."""

    scheme: str
    protocol: Protocol
    implementation: str  # "module:Class", imported only when such a target is made
    port: int = 0  # 0: not a network address
    secure: bool = False
    url: bool = True  # scheme://host form (else name[:path])
    versioned: bool = False  # name@VERSION[:path]: a ClickHouse version chbench installs


KINDS: dict[str, Kind] = {k.scheme: k for k in (
    Kind("embedded", Protocol.EMBEDDED, "chbench.targets.embedded:EmbeddedTarget", url=False),
    Kind("embedded@", Protocol.EMBEDDED, "chbench.targets.engine:EngineTarget", url=False, versioned=True),
    Kind("server@", Protocol.HTTP, "chbench.targets.engine_server:ServerEngineTarget", url=False, versioned=True),
    Kind("http", Protocol.HTTP, "chbench.targets.http:HttpTarget", 8123),
    Kind("https", Protocol.HTTP, "chbench.targets.http:HttpTarget", 8443, secure=True),
    Kind("clickhouse", Protocol.NATIVE, "chbench.targets.native:NativeTarget", 9000),
    Kind("clickhouses", Protocol.NATIVE, "chbench.targets.native:NativeTarget", 9440, secure=True),
)}

DEFAULT_TARGET = "embedded"  # the zero-setup default: the engine inside this process
DEFAULT_PORTS = {k.scheme: k.port for k in KINDS.values() if k.port}
SCHEMES = ", ".join(f"{k.scheme}://" if k.url else f"{k.scheme}VERSION" if k.versioned
                    else f"{k.scheme}, {k.scheme}:/path" for k in KINDS.values())


def scheme_for(protocol: Protocol, secure: bool) -> str:
    """The URL scheme of a network protocol, with or without TLS (for --host/--port)."""
    return next(k.scheme for k in KINDS.values() if k.protocol == protocol and k.secure == secure and k.url)


@dataclass(frozen=True)
class TargetURL:
    """A parsed target: where it is and who connects (never a password)."""

    kind: Kind
    host: str = ""
    port: int = 0
    user: str = "default"
    database: str | None = None
    path: str | None = None  # in-process engines: the data directory (None: in memory)
    version: str | None = None  # versioned kinds: the ClickHouse version asked for (24.8, 24.8.4.1, latest)

    @property
    def protocol(self) -> Protocol:
        return self.kind.protocol

    @property
    def secure(self) -> bool:
        return self.kind.secure

    @property
    def in_process(self) -> bool:
        return not self.kind.url

    def display(self) -> str:
        """The URL as results files and messages show it (no secrets)."""
        if not self.kind.url:
            return self.kind.scheme + (self.version or "") + (f":{self.path}" if self.path else "")
        base = f"{self.kind.scheme}://{self.user}@{self.host}:{self.port}"
        return base + (f"/{self.database}" if self.database else "")

    def address(self) -> str:
        """host:port (brackets around an IPv6 host), or the display form in process."""
        if not self.kind.url:
            return self.display()
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def with_path(self, path: str) -> TargetURL:
        return replace(self, path=path)


def shown(spec: str) -> str:
    """``spec`` as an error message may show it: a password written into it (refused, but
    echoed by the refusal of ``--store http://u:secret@…`` before) as ``***``."""
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", spec)


def parse_target_url(spec: str, user: str | None = None, database: str | None = None) -> TargetURL:
    """Parse ``spec``; a bad one is one clear UsageError naming what is wrong."""
    spec = spec.strip()
    try:
        return _parse(spec, user, database)
    except UsageError as e:
        raise UsageError(shown(str(e))) from None


def _parse(spec: str, user: str | None, database: str | None) -> TargetURL:
    name, sep, rest = spec.partition(":")
    base, at, version = name.partition("@")
    kind = KINDS.get(base.lower() + at)
    if kind is not None and kind.versioned:
        if not version:
            raise UsageError(f"target '{spec}' names no version: {base}@24.8, {base}@24.8.4.1 or {base}@latest")
        return TargetURL(kind, path=rest or None, version=version)
    if kind is not None and not kind.url:
        return TargetURL(kind, path=rest or None)
    if "://" not in spec:
        raise UsageError(f"unknown target '{spec}': use one of {SCHEMES}")
    try:
        parts = urlsplit(spec)
        scheme = parts.scheme.lower()
        kind = KINDS.get(scheme)
        if kind is None or not kind.url:
            raise UsageError(f"unknown target scheme '{scheme}://': use one of {SCHEMES}")
        if parts.password is not None:
            raise UsageError("put no password in a target URL: use CLICKHOUSE_PASSWORD or --password-file")
        port = parts.port or kind.port
        host = parts.hostname
        username = parts.username
    except ValueError as e:  # e.g. "Invalid IPv6 URL", a port that is not a number
        raise UsageError(f"bad target URL '{spec}': {e}") from None
    if not host:
        raise UsageError(f"target '{spec}' has no host")
    return TargetURL(kind, host=host, port=port, user=unquote(username) if username else (user or "default"),
                     database=parts.path.strip("/") or database)


def split_hosts(spec: str) -> list[str]:
    """A cluster target (``clickhouse://h1,h2:9001,h3:9000/db``) as one URL per host; a
    host without a port takes the port written last (else the scheme's default). Any
    other target: itself."""
    scheme, sep, rest = spec.strip().partition("://")
    netloc, slash, tail = rest.partition("/")
    if not sep or "," not in netloc:
        return [spec]
    user, at, hosts = netloc.rpartition("@")
    names = [h.strip() for h in hosts.split(",")]
    if any(not h for h in names):
        raise UsageError(f"target '{spec}': an empty host in the list")
    ports = [h.rpartition(":")[2] if ":" in h and not h.endswith("]") else "" for h in names]
    last = ports[-1]
    out = []
    for name, port in zip(names, ports, strict=True):
        host = name[:-(len(port) + 1)] if port else name
        out.append(f"{scheme}://{user}{at}{host}{':' + (port or last) if port or last else ''}{slash}{tail}")
    for u in out:
        parse_target_url(u)  # each one valid, or one clear line now
    return out
