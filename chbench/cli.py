"""Command line: ``chbench run`` and ``chbench compare``.

Data flows one way: cli → plan → runner → target → samples → results file → stats →
report. This module only parses arguments and hands over to ``chbench.commands``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from chbench import __version__
from chbench.errors import EXIT_USAGE, ChbenchError

RUN_EXAMPLES = """\
examples:
  chbench run --out before.json                      built-in suite on the embedded engine
  chbench run --target http://localhost:8123 --out before.json
  chbench run --target clickhouse://db1 --queries suite.sql --server-metrics --out a.json
  chbench run --target http://old:8123 --target http://new:8123 --out ab.json   side by side
  chbench run --setting-b max_threads=1 --out threads.json    settings A/B on one target
  chbench run --scale-b 1.1 --iterations 15 --out scale.json
  echo 'SELECT count() FROM numbers(1e8)' | chbench run --queries - --out one.json

password: CLICKHOUSE_PASSWORD or --password-file FILE (never put it in the URL)
exit codes: 0 ok, 1 some query failed, 2 bad input, 3 server lost (results kept),
            130 interrupted (results kept)
"""

COMPARE_EXAMPLES = """\
examples:
  chbench compare before.json after.json
  chbench compare ab.json                            a side-by-side file
  chbench compare before.json after.json --format markdown > report.md
  chbench compare old-script.json new-script.json   upgrade-script or clickhouse-benchmark JSON
  chbench compare a.json b.json --threshold 10 --fail-on unstable

verdicts: slower, faster, no change, unstable, only in A, only in B, failed
exit codes: 0 no query slower, 1 some query slower (see --fail-on), 2 bad input
"""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"chbench: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def _whole_number(minimum: int, words: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be {words}, got {v}")
        return v

    return parse


positive_int = _whole_number(1, "a positive number")
non_negative_int = _whole_number(0, "zero or more")


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return v


def percent(text: str) -> float:
    """'5', '5%' and '0.05' all mean 5%."""
    raw = text.strip()
    try:
        v = float(raw.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage") from None
    frac = v / 100 if raw.endswith("%") or v >= 1 else v
    if not 0 < frac < 10:
        raise argparse.ArgumentTypeError(f"threshold out of range: {text}")
    return frac


def setting(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"'{text}' is not name=value")
    k, v = text.split("=", 1)
    if not k.strip().replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"'{k}' is not a setting name")
    return k.strip(), v.strip()


def add_connection_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where queries go")
    g.add_argument("--target", action="append", metavar="URL", default=[],
                   help="embedded[:/dir] (default), http(s)://[user@]host[:port], clickhouse(s)://[user@]host[:port];"
                        " give two for a side-by-side run")
    g.add_argument("--host", help="server host (with --port: the familiar flags; native protocol unless --http)")
    g.add_argument("--port", type=positive_int)
    g.add_argument("--http", action="store_true", help="with --host: use the HTTP interface")
    g.add_argument("--secure", action="store_true", help="with --host: TLS (certificates are verified)")
    g.add_argument("--user", help="user name (default: 'default')")
    g.add_argument("--database", help="default database")
    g.add_argument("--password-file", metavar="FILE", help="read the password from FILE (else CLICKHOUSE_PASSWORD)")
    g.add_argument("--password", help=argparse.SUPPRESS)
    g.add_argument("--ca-file", metavar="FILE", help="CA bundle for TLS verification")


def build_parser() -> Parser:
    parser = Parser(
        prog="chbench",
        description="chbench — honest ClickHouse benchmarks: run a query suite, compare runs with verdicts "
                    "that survive an A/A test.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n  run       measure a query suite on one or two targets\n"
               "  compare   compare two results files (or the two sides of one)\n\n"
               "quick start:\n  chbench run --out before.json && chbench run --out after.json && "
               "chbench compare before.json after.json",
    )
    parser.add_argument("--version", action="version", version=f"chbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    run = sub.add_parser("run", help="measure a query suite", epilog=RUN_EXAMPLES,
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Run a query suite (the built-in one by default) and write a results file.")
    add_connection_args(run)
    w = run.add_argument_group("what is run")
    w.add_argument("--queries", metavar="FILE", help="SQL script (';'-separated, '-- name: NAME') or one query per "
                                                     "line; '-' reads stdin")
    w.add_argument("--query", action="append", default=[], metavar="SQL", help="a query (repeatable)")
    w.add_argument("--queries-format", choices=["auto", "script", "lines"], default="auto")
    w.add_argument("--scale", type=positive_float, default=1.0, help="multiply the built-in suite's row counts")
    w.add_argument("--keep-format", action="store_true", help="send queries as written (no FORMAT Null)")
    w.add_argument("--max-threads", type=positive_int)
    w.add_argument("--setting", type=setting, action="append", default=[], metavar="NAME=VALUE")
    w.add_argument("--allow-writes", action="store_true", help="lift the read-only default (readonly=2)")
    b = run.add_argument_group("side B of a side-by-side run on one target")
    b.add_argument("--setting-b", type=setting, action="append", default=[], metavar="NAME=VALUE")
    b.add_argument("--scale-b", type=positive_float)
    b.add_argument("--queries-b", metavar="FILE", help="queries for side B, matched by name")
    r = run.add_argument_group("how it is run")
    r.add_argument("--warmup", type=non_negative_int, default=1, help="warm-up runs per query (default 1)")
    r.add_argument("--iterations", type=positive_int, help="runs per query (default: adaptive)")
    r.add_argument("--min-runs", type=positive_int, default=5)
    r.add_argument("--precision", type=percent, default=0.02,
                   help="adaptive: stop when the median's 95%% CI is within ±this (default 2%%)")
    r.add_argument("--max-time-per-query", type=positive_float, default=20.0, metavar="S")
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit, enforced on the server")
    r.add_argument("--no-interleave", action="store_true", help="all runs of a query before the next one")
    r.add_argument("--server-metrics", action="store_true", help="fetch query_log metrics for every sample")
    r.add_argument("--no-calibration", action="store_true", help="skip the drift-guard calibration query")
    r.add_argument("--out", metavar="FILE", help="results file (default: chbench-<time>.json)")
    r.add_argument("--quiet", action="store_true", help="no progress output")

    cmp_ = sub.add_parser("compare", help="compare results", epilog=COMPARE_EXAMPLES,
                          formatter_class=argparse.RawDescriptionHelpFormatter,
                          description="Compare two results files (or both sides of one side-by-side file).")
    cmp_.add_argument("files", nargs="+", metavar="FILE")
    cmp_.add_argument("--threshold", type=percent, default=0.05, help="smallest change worth a verdict (default 5%%)")
    cmp_.add_argument("--alpha", type=float, default=0.05, help="significance level after correction (default 0.05)")
    cmp_.add_argument("--correction", choices=["holm", "bh", "none"], default="holm")
    cmp_.add_argument("--metric", choices=["client_ms", "server_ms"], default="client_ms")
    cmp_.add_argument("--between-run-factor", type=float, default=0.7, metavar="F",
                      help="two separate runs: allow for each run shifting a query's median by F x its "
                           "run-to-run spread (MAD); 0 turns it off (default 0.7, see docs/statistics.md)")
    cmp_.add_argument("--format", choices=["console", "markdown", "json", "csv"], default="console")
    cmp_.add_argument("--fail-on", choices=["slower", "unstable", "never"], default="slower")
    cmp_.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "run":
            from chbench.commands.run import cmd_run

            return cmd_run(args)
        from chbench.commands.compare import cmd_compare

        return cmd_compare(args)
    except ChbenchError as e:
        sys.stderr.write(f"chbench: error: {e}\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("chbench: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
