"""What ``ingest`` and ``read`` share: their endpoints, path lists and output."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.connection import credentials, target_specs
from chbench.errors import UsageError
from chbench.results import TransferDocument, check_output_path
from chbench.targets import Protocol
from chbench.transfer.endpoints import Endpoints, parse_endpoints


def endpoints(args: argparse.Namespace) -> Endpoints:
    creds = credentials(args)
    return parse_endpoints(target_specs(args), creds.user, creds.database, creds.password, creds.ca_file)


def prepare(args: argparse.Namespace, registry: dict[str, Protocol], what: str) -> tuple[Endpoints, list[str]]:
    """Before anything runs: the output can be written, the endpoints, the paths, and every
    server named answers."""
    check_output_path(args.out)
    ep = endpoints(args)
    names = path_names(args.paths, registry, ep, what)
    reachable(ep)
    return ep, names


def reachable(ep: Endpoints) -> None:
    """Each server address given answers, or one line and exit 2 (ConnectError). Each path
    opens its own client, so without this a server that is down read as every path
    failed, exit 1: a finding about the paths where the input was wrong."""
    from chbench.targets import Credentials, make_target

    for protocol, url in ep.urls.items():
        if protocol == Protocol.EMBEDDED:
            continue
        target = make_target(url, Credentials(password=ep.password, ca_file=ep.ca_file))
        try:
            target.connect()
        finally:
            target.close()


def path_names(text: str | None, registry: dict[str, Protocol], ep: Endpoints, what: str) -> list[str]:
    """The paths asked for; by default every path of the embedded engine, or of a server."""
    known = list(registry)
    if not text:
        embedded = ep.embedded is not None
        return [n for n in known if (registry[n] == Protocol.EMBEDDED) == embedded]
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"unknown {what} path '{bad[0]}': choose from {', '.join(known)}")
    return names


def batch_sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--batch-size takes row counts like 100000 or 10000,100000: got '{text}'") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise UsageError(f"--batch-size takes positive row counts: got '{text}'")
    return sizes


def show(fmt: str, doc: TransferDocument) -> None:
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.transfer import transfer_section

    report = Report("", [transfer_section(doc, charts=False)], data=doc.to_json())
    sys.stdout.write(get_exporter(fmt).render(report))
