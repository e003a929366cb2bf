"""``chbench ingest`` and ``chbench read``: which client path moves data fastest."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from chbench.commands.connection import credentials, target_specs
from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, UsageError
from chbench.export import get_exporter
from chbench.results.store import write_atomic
from chbench.runner.environment import document_header, now_iso
from chbench.transfer.endpoints import Endpoints, parse_endpoints


def endpoints(args: argparse.Namespace) -> Endpoints:
    creds = credentials(args)
    return parse_endpoints(target_specs(args), creds.user, creds.database, creds.password, creds.ca_file)


def _names(text: str | None, known: list[str], what: str) -> list[str]:
    if not text:
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"unknown {what} path '{bad[0]}': choose from {', '.join(known)}")
    return names


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--batch-size takes row counts like 100000 or 10000,100000: got '{text}'") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise UsageError(f"--batch-size takes positive row counts: got '{text}'")
    return sizes


def _finish(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    doc["status"] = "complete"
    doc["meta"]["ended_at"] = now_iso()
    if args.out:
        write_atomic(args.out, doc)
    sys.stdout.write(get_exporter(args.format).transfer(doc))


def _check_out(path: str | None) -> None:
    if path and not Path(path).resolve().parent.is_dir():
        raise UsageError(f"cannot write results to {path}: directory {Path(path).resolve().parent} does not exist")


def cmd_ingest(args: argparse.Namespace) -> int:
    from chbench.transfer.dataset import Dataset
    from chbench.transfer.ingest import drop_tables, run_ingest
    from chbench.transfer.ingest_paths import PATHS

    _check_out(args.out)
    ep = endpoints(args)
    names = _names(args.paths, list(PATHS), "ingest")
    if args.paths is None:  # by default, the paths this target can take
        names = [n for n in names if PATHS[n].protocol != "embedded"] if ep.embedded is None else \
            [n for n in names if PATHS[n].protocol == "embedded"]
    sizes = _sizes(args.batch_size)
    ds = Dataset(args.rows, args.seed)
    doc = document_header("ingest")
    doc["targets"] = ep.describe()
    partial: list[dict[str, Any]] = []

    def log(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    def on_entry(e: dict[str, Any]) -> None:
        partial.append(e)
        if args.out:
            doc["result"] = {"paths": partial}
            write_atomic(args.out, doc)

    log(f"generating {args.rows:,} rows (seed {args.seed}) …")
    try:
        result = run_ingest(ep, ds, names, sizes, args.async_insert, args.compress, log, on_entry=on_entry)
    except KeyboardInterrupt:
        doc["status"] = "interrupted"
        doc["result"] = {"paths": partial}
        if args.out:
            write_atomic(args.out, doc)
        return EXIT_INTERRUPTED
    doc["result"] = result
    if not args.keep_tables:
        drop_tables(ep, result["paths"])
    _finish(args, doc)
    bad = result["mismatches"] + [e["name"] for e in result["paths"] if e.get("status") == "failed"]
    if result["mismatches"]:
        sys.stderr.write("chbench: error: wrong data landed through: " + ", ".join(result["mismatches"]) + "\n")
    elif bad:
        sys.stderr.write("chbench: error: failed paths: " + ", ".join(bad) + "\n")
    return EXIT_FINDING if bad else EXIT_OK


def cmd_read(args: argparse.Namespace) -> int:
    from chbench.transfer.read import DEFAULT_QUERY, run_read
    from chbench.transfer.read_paths import PATHS

    _check_out(args.out)
    ep = endpoints(args)
    names = _names(args.paths, list(PATHS), "read")
    if args.paths is None:
        names = [n for n in names if PATHS[n].protocol != "embedded"] if ep.embedded is None else \
            [n for n in names if PATHS[n].protocol == "embedded"]
    if args.query and "{rows}" not in args.query and args.rows_given:
        raise UsageError("--rows with --query: put {rows} in the query, or leave --rows out")
    query = (args.query or DEFAULT_QUERY).replace("{rows}", str(args.rows))
    expected = args.rows if (args.query is None or "{rows}" in args.query) else None
    settings = {}
    if args.max_block_size:
        settings["max_block_size"] = str(args.max_block_size)
    doc = document_header("read")
    doc["targets"] = ep.describe()

    def log(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    try:
        doc["result"] = run_read(ep, query, expected, names, settings, args.compress, args.repeat, args.timeout, log,
                                 args.buffer_bytes)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    _finish(args, doc)
    bad = [e["name"] for e in doc["result"]["paths"] if e.get("status") == "failed" or e.get("rows_ok") is False]
    if bad:
        sys.stderr.write("chbench: error: failed or wrong row count: " + ", ".join(bad) + "\n")
    return EXIT_FINDING if bad else EXIT_OK
