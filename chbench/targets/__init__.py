"""Targets: turn a target URL into a :class:`Target`.

Syntax::

    embedded                      chDB in this process (the default)
    embedded:/path/dir            chDB with a persistent database directory
    http://[user@]host[:8123][/database]       HTTP interface
    https://[user@]host[:8443][/database]      HTTP over TLS (certificates verified)
    clickhouse://[user@]host[:9000][/database] native protocol
    clickhouses://[user@]host[:9440][/database] native protocol over TLS

Passwords never go in the URL: they come from ``CLICKHOUSE_PASSWORD`` or
``--password-file`` (``--password`` works, with a warning).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from chbench.errors import UsageError
from chbench.targets.base import Sample, ServerInfo, Target

__all__ = ["Credentials", "Sample", "ServerInfo", "Target", "make_target", "DEFAULT_PORTS"]

DEFAULT_PORTS = {"http": 8123, "https": 8443, "clickhouse": 9000, "clickhouses": 9440}
SCHEMES = "embedded, embedded:/path, http://, https://, clickhouse://, clickhouses://"


@dataclass
class Credentials:
    user: str | None = None
    password: str | None = None
    database: str | None = None
    ca_file: str | None = None


def make_target(spec: str, creds: Credentials, light: bool = False, stage: str = "complete") -> Target:
    """Build (but do not connect) the target named by ``spec``.

    ``light`` and ``stage`` concern the native protocol only (see targets/native.py):
    load runs ask for a lighter protocol revision, and ``stage`` for a partial result."""
    spec = spec.strip()
    if spec == "embedded" or spec.startswith("embedded:"):
        from chbench.targets.embedded import EmbeddedTarget

        path = spec[len("embedded:") :] if spec.startswith("embedded:") else ""
        if stage != "complete":
            raise UsageError("--stage works with the native protocol only (clickhouse:// or --host/--port)")
        return EmbeddedTarget(spec, path or None)
    if "://" not in spec:
        raise UsageError(f"unknown target '{spec}': use one of {SCHEMES}")
    parts = urlsplit(spec)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UsageError(f"unknown target scheme '{scheme}://': use one of {SCHEMES}")
    if parts.password is not None:
        raise UsageError(
            "put no password in a target URL: use CLICKHOUSE_PASSWORD or --password-file"
        )
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise UsageError(f"bad port in target '{spec}'") from None
    host = parts.hostname
    if not host:
        raise UsageError(f"target '{spec}' has no host")
    user = unquote(parts.username) if parts.username else (creds.user or "default")
    database = parts.path.strip("/") or creds.database
    secure = scheme in ("https", "clickhouses")
    shown = f"{scheme}://{user}@{host}:{port}" + (f"/{database}" if database else "")
    if scheme in ("http", "https"):
        from chbench.targets.http import HttpTarget

        if stage != "complete":
            raise UsageError("--stage works with the native protocol only (clickhouse:// or --host/--port)")
        return HttpTarget(shown, host, port, secure, user, creds.password, database, creds.ca_file, light)
    from chbench.targets.native import NativeTarget

    return NativeTarget(shown, host, port, secure, user, creds.password, database, creds.ca_file, light, stage)
