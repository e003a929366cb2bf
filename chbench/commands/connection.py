"""Targets and credentials from the command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from chbench.errors import UsageError
from chbench.targets import Credentials, Target, make_target


def credentials(args: argparse.Namespace) -> Credentials:
    password = None
    if args.password_file:
        p = Path(args.password_file)
        try:
            password = p.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as e:
            raise UsageError(f"cannot read password file {args.password_file}: {e.strerror}") from None
    elif args.password is not None:
        sys.stderr.write(
            "chbench: warning: --password shows in the process list; use CLICKHOUSE_PASSWORD or --password-file\n"
        )
        password = args.password
    elif os.environ.get("CLICKHOUSE_PASSWORD") is not None:
        password = os.environ["CLICKHOUSE_PASSWORD"]
    return Credentials(user=args.user, password=password, database=args.database, ca_file=args.ca_file)


def target_specs(args: argparse.Namespace) -> list[str]:
    specs = list(args.target)
    if args.host or args.port:
        scheme = ("https" if args.secure else "http") if args.http else ("clickhouses" if args.secure else "clickhouse")
        host = args.host or "localhost"
        port = f":{args.port}" if args.port else ""
        specs.append(f"{scheme}://{host}{port}")
    return specs or ["embedded"]


def build_targets(args: argparse.Namespace) -> list[Target]:
    creds = credentials(args)
    return [make_target(spec, creds) for spec in target_specs(args)]
