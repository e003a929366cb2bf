"""``chbench read``: the same result through each client path, against two ceilings."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import PASSWORD_HELP, add_connection, add_format, add_quiet, positive_float, positive_int
from chbench.errors import EXIT_FINDING, EXIT_OK, UsageError

NAME = "read"
HELP = "read throughput through each client path, against two ceilings"
DESCRIPTION = ("Read the same result through each client path (each in a process of its own: its peak RSS is its "
               "own), next to two ceilings measured in the same run: the query with FORMAT Null, and its Native "
               "bytes drained without decoding.")
DEFAULT_ROWS = 10_000_000


def epilog() -> str:
    from chbench.transfer.read_paths import PATHS

    return ("examples:\n"
            "  chbench read --rows 1000000                                the embedded engine's paths\n"
            "  chbench read --target http://localhost:8123 --target clickhouse://localhost:9000 --out read.json\n"
            "  chbench read --target http://localhost:8123 --query 'SELECT number FROM numbers_mt({rows})' "
            "--rows 50000000\n"
            f"paths: {', '.join(PATHS)}\n{PASSWORD_HELP}\n"
            "exit codes: 0 every path read the rows, 1 a path failed or read a wrong row count, 2 bad input,\n"
            "            130 interrupted (results kept)\n")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection(p)
    p.add_argument("--rows", type=positive_int, help=f"rows to read (default {DEFAULT_ROWS})")
    p.add_argument("--query", help="the query; {rows} is replaced by --rows (default: "
                                   "SELECT number, toString(number) AS s FROM numbers_mt({rows}))")
    p.add_argument("--paths", metavar="LIST", help="comma-separated paths (default: all this target can take)")
    p.add_argument("--max-block-size", type=positive_int, metavar="N", help="max_block_size setting")
    p.add_argument("--compress", action="store_true", help="compressed transfer (gzip raw HTTP, lz4 libraries)")
    p.add_argument("--buffer-bytes", type=positive_int, metavar="N",
                   help="clickhouse-connect's read-ahead buffer (http_buffer_size; default 10 MiB) — the one "
                        "client here with such a knob")
    p.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                   help="rounds: every path once a round, in a rotated order; the median kept, paths compared "
                        "round by round (default 3)")
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="S", help="per path (default 600)")
    add_format(p, ["console", "markdown", "json"])
    p.add_argument("--out", metavar="FILE", help="results file (JSON)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from chbench.commands.transfer_args import prepare, show
    from chbench.results import ReadDocument, ResultsWriter
    from chbench.transfer.read import ReadOptions, default_query, run_read
    from chbench.transfer.read_paths import PATHS
    from chbench.ui import say

    ep, names = prepare(args, {n: p.protocol for n, p in PATHS.items()}, "read")
    if args.query and "{rows}" not in args.query and args.rows is not None:
        raise UsageError("--rows with --query: put {rows} in the query, or leave --rows out")
    rows = args.rows or DEFAULT_ROWS
    opts = ReadOptions(query=(args.query or default_query(ep)).replace("{rows}", str(rows)),
                       rows=rows if (args.query is None or "{rows}" in args.query) else None,
                       settings={"max_block_size": str(args.max_block_size)} if args.max_block_size else {},
                       compress=args.compress, repeat=args.repeat, timeout=args.timeout,
                       buffer_bytes=args.buffer_bytes)
    doc = ReadDocument(targets=ep.describe())
    log = say(args.quiet)
    with ResultsWriter(args.out, doc) as writer:
        def partial(result: dict[str, object]) -> None:
            doc.result = result
            writer.checkpoint(force=True)

        doc.result = run_read(ep, names, opts, log, partial)
    show(args.format, doc)
    bad = [e["name"] for e in doc.paths if e.get("status") == "failed" or e.get("rows_ok") is False]
    if bad:
        sys.stderr.write("chbench: error: failed or wrong row count: " + ", ".join(bad) + "\n")
    return EXIT_FINDING if bad else EXIT_OK
