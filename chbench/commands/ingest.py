"""``chbench ingest``: the same data set through each client path, every table verified."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chbench.commands.args import PASSWORD_HELP, add_connection, add_format, add_quiet, non_negative_int, positive_int
from chbench.errors import EXIT_FINDING, EXIT_OK

NAME = "ingest"
HELP = "insert throughput through each client path, every table verified"
DESCRIPTION = ("Insert the same deterministic event data set through each client path, each into its own table; "
               "verify every table (row count from system.parts, CRC32 of a canonical GROUP BY) and compare with "
               "the server's own INSERT … SELECT.")


def epilog() -> str:
    from chbench.transfer.ingest_paths import PATHS

    return ("examples:\n"
            "  chbench ingest                                             the embedded engine's paths\n"
            "  chbench ingest --target http://localhost:8123 --target clickhouse://localhost:9000 --out ingest.json\n"
            "  chbench ingest --target http://localhost:8123 --paths http-native,connect-arrow "
            "--batch-size 10000,100000\n"
            f"paths: {', '.join(PATHS)}\n{PASSWORD_HELP}\n"
            "exit codes: 0 every path landed the expected data, 1 a path failed or landed wrong data, 2 bad input,\n"
            "            130 interrupted (results kept)\n")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection(p)
    p.add_argument("--rows", type=positive_int, default=1_000_000, help="rows in the data set (default 1000000)")
    p.add_argument("--seed", type=non_negative_int, default=1, help="data set seed (default 1)")
    p.add_argument("--paths", metavar="LIST", help="comma-separated paths (default: all this target can take)")
    p.add_argument("--batch-size", default="100000", metavar="N[,N…]",
                   help="rows per batch for batched paths; several values sweep (default 100000)")
    p.add_argument("--async-insert", action="store_true", help="send with async_insert=1, wait_for_async_insert=1")
    p.add_argument("--compress", action="store_true", help="compress what is sent (gzip for raw HTTP, lz4 for "
                                                           "the libraries)")
    p.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                   help="rounds: every path once a round, in a rotated order; the median kept, paths compared "
                        "round by round (default 3)")
    p.add_argument("--keep-tables", action="store_true", help="keep the chbench_ingest_* tables afterwards")
    add_format(p, ["console", "markdown", "json"])
    p.add_argument("--out", metavar="FILE", help="results file (JSON)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from chbench.commands.transfer_args import batch_sizes, prepare, show
    from chbench.results import IngestDocument, ResultsWriter
    from chbench.transfer.dataset import Dataset
    from chbench.transfer.ingest import drop_tables, run_ingest
    from chbench.transfer.ingest_paths import PATHS
    from chbench.ui import say

    ep, names = prepare(args, {n: c.protocol for n, c in PATHS.items()}, "ingest")
    sizes = batch_sizes(args.batch_size)
    ds = Dataset(args.rows, args.seed)
    doc = IngestDocument(targets=ep.describe())
    log = say(args.quiet)
    with ResultsWriter(args.out, doc) as writer:
        def partial(result: dict[str, Any]) -> None:
            doc.result = result
            writer.checkpoint(force=True)

        log(f"generating {args.rows:,} rows (seed {args.seed}) …")
        doc.result = run_ingest(ep, ds, names, sizes, args.async_insert, args.compress, log, partial=partial,
                                 rounds=args.repeat)
        if not args.keep_tables:
            drop_tables(ep, doc.result["paths"])
    show(args.format, doc)
    result = doc.result
    bad = result["mismatches"] + [e["name"] for e in result["paths"] if e.get("status") == "failed"]
    if result["mismatches"]:
        sys.stderr.write("chbench: error: wrong data landed through: " + ", ".join(result["mismatches"]) + "\n")
    elif bad:
        sys.stderr.write("chbench: error: failed paths: " + ", ".join(bad) + "\n")
    return EXIT_FINDING if bad else EXIT_OK
