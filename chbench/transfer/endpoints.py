"""Where transfer paths connect: the HTTP and native addresses of one server (or the
embedded engine), parsed from ``--target`` URLs, and a lean raw-HTTP connection.

``chbench ingest`` and ``chbench read`` compare client libraries that each open their
own connections, so they take addresses rather than a :class:`Target`. Give one
``http://`` and one ``clickhouse://`` URL of the same server to reach every path; a path
whose protocol is missing is skipped with that reason.
"""

from __future__ import annotations

import base64
import http.client
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from chbench.errors import UsageError, quiet_library_log
from chbench.targets import Protocol, TargetURL, parse_target_url


@dataclass
class Address:
    scheme: str
    host: str
    port: int
    user: str
    database: str | None

    @property
    def secure(self) -> bool:
        return self.scheme in ("https", "clickhouses")

    def url(self) -> str:
        return f"{self.scheme}://{self.user}@{self.host}:{self.port}" + (f"/{self.database}" if self.database else "")


@dataclass
class Endpoints:
    http: Address | None
    native: Address | None
    embedded: str | None  # a chDB path ('' = in memory)
    password: str | None
    ca_file: str | None
    urls: dict[Protocol, TargetURL] = field(default_factory=dict)

    def describe(self) -> dict[str, str | None]:
        return {Protocol.HTTP.value: self.http.url() if self.http else None,
                Protocol.NATIVE.value: self.native.url() if self.native else None,
                Protocol.EMBEDDED.value: None if self.embedded is None else (self.embedded or ":memory:")}

    def has(self, protocol: Protocol) -> bool:
        return {Protocol.HTTP: self.http, Protocol.NATIVE: self.native,
                Protocol.EMBEDDED: self.embedded}.get(protocol) is not None

    def missing(self, protocol: Protocol) -> str | None:
        """Why a path of ``protocol`` cannot run here, or None."""
        if self.has(protocol):
            return None
        if protocol == Protocol.EMBEDDED:
            return "needs the embedded target"
        if protocol == Protocol.HTTP:
            return "needs an http:// target (give one with --target)"
        return "needs a clickhouse:// target (give one with --target)"

    def admin_url(self) -> TargetURL:
        """Where verification and tables go: the HTTP address, else the native one, else
        the embedded engine."""
        assert self.urls, "no endpoint"
        for protocol in (Protocol.HTTP, Protocol.NATIVE, Protocol.EMBEDDED):
            if protocol in self.urls:
                return self.urls[protocol]
        raise AssertionError("unreachable")


def parse_endpoints(specs: list[str], user: str | None, database: str | None, password: str | None,
                    ca_file: str | None) -> Endpoints:
    ep = Endpoints(None, None, None, password, ca_file)
    urls: list[TargetURL] = []
    for spec in specs:
        url = parse_target_url(spec, user, database)
        if url.kind.versioned and url.protocol == Protocol.EMBEDDED:
            raise UsageError(f"{spec}: ingest and read drive chDB in this process; give embedded, a server URL or "
                             f"server@{url.version}")
        if url.kind.versioned:  # server@VERSION: its HTTP and native addresses, both
            from chbench.targets.engine_server import server_urls

            urls += server_urls(url)
        else:
            urls.append(url)
    for url in urls:
        if url.protocol in ep.urls and url.protocol != Protocol.EMBEDDED:
            raise UsageError(f"give at most one {url.protocol.value} target")
        ep.urls.setdefault(url.protocol, url)
        if url.protocol == Protocol.EMBEDDED:
            if ep.embedded is not None:
                raise UsageError("give one embedded target")
            ep.embedded = url.path or ""
            continue
        addr = Address(url.kind.scheme, url.host, url.port, url.user, url.database)
        if url.protocol == Protocol.HTTP:
            ep.http = addr
        else:
            ep.native = addr
    if ep.embedded is not None and (ep.http or ep.native):
        raise UsageError("the embedded engine and a server are different targets: benchmark one at a time")
    return ep


class Skip(Exception):
    """A path cannot run here; the message says why (reported, not failed)."""


def connect_client(addr: Address | None, password: str | None, ca_file: str | None, compress: bool) -> Any:
    """A clickhouse-connect client for ``addr`` (Skip when there is none or it cannot connect)."""
    import clickhouse_connect

    quiet_library_log("clickhouse_connect")
    if addr is None:
        raise Skip("needs an http:// target")
    try:
        return clickhouse_connect.get_client(host=addr.host, port=addr.port, username=addr.user,
                                             password=password or "", database=addr.database or "default",
                                             secure=addr.secure, ca_cert=ca_file, compress="lz4" if compress else False)
    except Exception as e:  # noqa: BLE001 - e.g. a server too old for clickhouse-connect
        raise Skip(f"clickhouse-connect cannot connect: {str(e).splitlines()[0][:200]}") from None


def driver_client(addr: Address | None, password: str | None, ca_file: str | None, compress: bool,
                  settings: dict[str, Any] | None = None) -> Any:
    """A clickhouse-driver client for ``addr`` (Skip when there is none, or for compression
    without the clickhouse-cityhash package it needs)."""
    from clickhouse_driver import Client

    if addr is None:
        raise Skip("needs a clickhouse:// target")
    kw: dict[str, Any] = {}
    if compress:
        try:
            import clickhouse_cityhash  # noqa: F401 - clickhouse-driver's compression needs it
        except ImportError:
            raise Skip("clickhouse-driver compression needs the clickhouse-cityhash package") from None
        kw["compression"] = "lz4"
    return Client(host=addr.host, port=addr.port, user=addr.user, password=password or "",
                  database=addr.database or "default", secure=addr.secure, ca_certs=ca_file, client_name="chbench",
                  settings=settings or {}, **kw)


class RawHttp:
    """One keep-alive HTTP connection on the standard library, for raw-HTTP paths."""

    def __init__(self, addr: Address, password: str | None, ca_file: str | None, timeout: float = 600.0) -> None:
        self.addr = addr
        token = base64.b64encode(f"{addr.user}:{password or ''}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}
        self._ssl = ssl.create_default_context(cafile=ca_file) if addr.secure else None
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            if self._ssl is not None:
                self.conn = http.client.HTTPSConnection(self.addr.host, self.addr.port, timeout=self.timeout,
                                                        context=self._ssl)
            else:
                self.conn = http.client.HTTPConnection(self.addr.host, self.addr.port, timeout=self.timeout)
        return self.conn

    def path(self, params: dict[str, str]) -> str:
        if self.addr.database:
            params = {"database": self.addr.database, **params}
        return "/?" + urlencode(params)

    def post(self, params: dict[str, str], body: Any, headers: dict[str, str] | None = None,
             chunked: bool = False) -> http.client.HTTPResponse:
        """Send; return the response with its body unread (the caller reads or streams it).
        Connection problems raise OSError / http.client.HTTPException; the connection is
        dropped so the next call opens a fresh one."""
        conn = self._connection()
        try:
            conn.request("POST", self.path(params), body=body, headers={**self.headers, **(headers or {})},
                         encode_chunked=chunked)
            return conn.getresponse()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
