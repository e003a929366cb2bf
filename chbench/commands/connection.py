"""Targets and credentials from the command line (the connection flags of ``args.py``)."""

from __future__ import annotations

import argparse
import os
import sys

from chbench.errors import UsageError
from chbench.files import read_user_file, read_user_text
from chbench.targets import DEFAULT_TARGET, Credentials, Protocol, Target, make_target
from chbench.targets.url import scheme_for


def password_from(password_file: str | None, given: str | None = None) -> str | None:
    """A password file, else a password given on the command line (with a warning),
    else ``CLICKHOUSE_PASSWORD``, else none."""
    if password_file:
        return read_user_text(password_file, "password file").rstrip("\r\n")
    if given is not None:
        sys.stderr.write(
            "chbench: warning: --password shows in the process list; use CLICKHOUSE_PASSWORD or --password-file\n"
        )
        return given
    return os.environ.get("CLICKHOUSE_PASSWORD")


def ca_file_from(path: str | None) -> str | None:
    """``--ca-file``: a file that is there and can be read, or one line now (a missing one
    was a FileNotFoundError traceback from the TLS layer on connecting)."""
    if path:
        read_user_file(path, "CA file")
    return path


def credentials(args: argparse.Namespace) -> Credentials:
    return Credentials(user=args.user, password=password_from(args.password_file, args.password),
                       database=args.database, ca_file=ca_file_from(args.ca_file))


def named_targets(args: argparse.Namespace) -> list[str]:
    """The targets the user named: ``--target`` URLs, then ``--host``/``--port`` pairs
    (one host with several ports, several hosts on one port, or as many of each)."""
    specs = list(args.target)
    hosts, ports = list(args.host), list(args.port)
    if hosts or ports:
        if len(hosts) > 1 and len(ports) > 1 and len(hosts) != len(ports):
            raise UsageError(f"{len(hosts)} --host and {len(ports)} --port: give as many of each, or one of either")
        scheme = scheme_for(Protocol.HTTP if args.http else Protocol.NATIVE, args.secure)
        for i in range(max(len(hosts), len(ports))):
            h = hosts[i if len(hosts) > 1 else 0] if hosts else "localhost"
            p = ports[i if len(ports) > 1 else 0] if ports else None
            specs.append(f"{scheme}://{'[' + h + ']' if ':' in h else h}" + (f":{p}" if p else ""))
    return specs


def target_specs(args: argparse.Namespace) -> list[str]:
    """The named targets, or the embedded engine (the zero-setup default)."""
    return named_targets(args) or [DEFAULT_TARGET]


def build_targets(args: argparse.Namespace, light: bool = False) -> list[Target]:
    creds = credentials(args)
    return [make_target(spec, creds, light=light) for spec in target_specs(args)]
