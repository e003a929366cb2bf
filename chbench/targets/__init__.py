"""Targets: where queries go, behind one interface (``base.Target``).

``make_target(spec, credentials)`` parses the target URL (``url.py``: the syntax and the
registry of kinds) and builds the implementation its scheme names. A new kind of target
is a module in this folder plus one line in ``url.KINDS``.
"""

from __future__ import annotations

import importlib

from chbench.targets.base import Capabilities, Credentials, Sample, ServerInfo, Target, Unsupported, time_limit
from chbench.targets.result import Result
from chbench.targets.url import DEFAULT_PORTS, DEFAULT_TARGET, SCHEMES, Protocol, TargetURL, parse_target_url

__all__ = [
    "DEFAULT_PORTS",
    "DEFAULT_TARGET",
    "SCHEMES",
    "Capabilities",
    "Credentials",
    "Protocol",
    "Result",
    "Sample",
    "ServerInfo",
    "Target",
    "TargetURL",
    "Unsupported",
    "make_target",
    "parse_target_url",
    "time_limit",
    "target_class",
]


def target_class(url: TargetURL) -> type[Target]:
    """The implementation of ``url``'s kind (imported on first use: chDB and the
    driver are slow to import and not every run needs them)."""
    module, _, name = url.kind.implementation.partition(":")
    cls: type[Target] = getattr(importlib.import_module(module), name)
    return cls


def make_target(spec: str | TargetURL, creds: Credentials, light: bool = False, stage: str = "complete") -> Target:
    """Build (but do not connect) the target named by ``spec``.

    ``light`` asks for the lean client paths of load runs (see targets/http.py and
    targets/native.py); ``stage`` a partial result (targets whose capabilities have
    ``stages``)."""
    url = spec if isinstance(spec, TargetURL) else parse_target_url(spec, creds.user, creds.database)
    cls = target_class(url)
    if stage != "complete" and not cls.capabilities.stages:
        raise Unsupported("--stage works with the native protocol only (clickhouse:// or --host/--port)")
    return cls.from_url(url, creds, light, stage)
