"""``chbench clickbench``: the hits table and its 43 queries, verbatim — one module per
subcommand, listed once in ``SUBCOMMANDS``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chbench.errors import UsageError

if TYPE_CHECKING:
    from chbench.clickbench.stress import Connect
    from chbench.targets import Target

NAME = "clickbench"
HELP = "ClickBench: load, run with checksums, compare, stress, crash-test"
DESCRIPTION = "ClickBench: the hits table and its 43 queries, verbatim."
EPILOG = """\
examples:
  chbench clickbench load --synthetic 1000000 --out load.json          embedded engine (default target)
  chbench clickbench run --load-results load.json --out full.json --results clickbench.json
  chbench clickbench load --target http://localhost:8123 --from hits.parquet
  chbench clickbench run --target http://localhost:8123 --reference full.json --concurrent 4 --duration 60
  chbench clickbench compare clickbench.json result-clickhouse-c8g.4xlarge-20260822.json
  chbench clickbench stress --target http://localhost:8123 --concurrent 8 --duration 60 --ingest
  chbench clickbench crash-test --rows 1000000 --cycles 5
"""
SUBCOMMANDS = ("load", "run", "compare", "stress", "crash_test")


def add_arguments(p: argparse.ArgumentParser) -> None:
    import importlib

    from chbench.commands.args import Parser, add_command

    sub = p.add_subparsers(dest="clickbench_command", metavar="COMMAND", parser_class=Parser)
    for name in SUBCOMMANDS:
        add_command(sub, importlib.import_module(f"chbench.commands.clickbench.{name}"))


def run(args: argparse.Namespace) -> int:
    raise UsageError("use 'chbench clickbench load|run|compare|stress|crash-test' (see --help)")


EMBEDDED_DIR = "chbench-hits"  # where the in-process engine keeps hits between commands


def one_target(args: argparse.Namespace, say_where: bool = False, connect: bool = True) -> Target:
    """The one target of a ClickBench command, connected (unless ``connect`` is False). An
    in-process engine keeps its data in ./chbench-hits unless told otherwise (in memory,
    the table would vanish with the process)."""
    import sys

    from chbench.commands.connection import credentials, target_specs
    from chbench.targets import make_target, parse_target_url

    specs = target_specs(args)
    if len(specs) != 1:
        raise UsageError("give one target")
    url = parse_target_url(specs[0])
    if url.in_process and url.path is None:
        url = url.with_path(EMBEDDED_DIR)
        if say_where and not args.quiet:
            sys.stderr.write(f"note: embedded engine, data in ./{EMBEDDED_DIR} (--target embedded:DIR for another "
                             "place)\n")
    t = make_target(url, credentials(args))
    if connect:
        t.connect()
    return t


def maker(args: argparse.Namespace) -> Connect:
    """Where stress connects (its lanes, the writer): the target's spec and credentials."""
    from chbench.clickbench.stress import Connect
    from chbench.commands.connection import credentials, target_specs

    return Connect(target_specs(args)[0], credentials(args))
