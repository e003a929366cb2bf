"""Command line: ``chbench run`` and ``chbench compare``.

Data flows one way: cli → plan → runner → target → samples → results file → stats →
report. This module only parses arguments and hands over to ``chbench.commands``."""

from __future__ import annotations

import argparse
import re
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


INGEST_EXAMPLES = """\
examples:
  chbench ingest                                             the embedded engine's paths
  chbench ingest --target http://localhost:8123 --target clickhouse://localhost:9000 --out ingest.json
  chbench ingest --target http://localhost:8123 --paths http-native,connect-arrow --batch-size 10000,100000
paths: http-file, http-batches, http-native, connect-native, connect-arrow, driver-rows, driver-columns,
       embedded-file, embedded-arrow
exit codes: 0 every path landed the expected data, 1 a path failed or landed wrong data, 2 bad input
"""


READ_EXAMPLES = """\
examples:
  chbench read --rows 1000000                                the embedded engine's paths
  chbench read --target http://localhost:8123 --target clickhouse://localhost:9000 --out read.json
  chbench read --target http://localhost:8123 --query 'SELECT number FROM numbers_mt({rows})' --rows 50000000
paths: http-native, http-arrowstream, http-parquet, http-tsv, http-rowbinary, connect-rows, connect-numpy,
       connect-arrow, connect-df, connect-stream, driver-execute, driver-iter, driver-columnar, driver-numpy,
       embedded-arrow, embedded-df
"""


CLICKBENCH_EXAMPLES = """\
examples:
  chbench clickbench load --synthetic 1000000 --out load.json          embedded engine (default target)
  chbench clickbench run --load-results load.json --out full.json --results clickbench.json
  chbench clickbench load --target http://localhost:8123 --from hits.parquet
  chbench clickbench run --target http://localhost:8123 --reference full.json --concurrent 4 --duration 60
  chbench clickbench compare clickbench.json result-clickhouse-c8g.4xlarge-20260822.json
  chbench clickbench stress --target http://localhost:8123 --concurrent 8 --duration 60 --ingest
  chbench clickbench crash-test --rows 1000000 --cycles 5
"""


LOAD_EXAMPLES = """\
examples (clickhouse-benchmark's flags; reports on stderr, as it prints them):
  echo 'SELECT 1' | chbench load -h localhost --port 9000 -c 4 -t 10
  chbench load -q 'SELECT count() FROM hits' -C 8 -i 2000 --json cb.json --out load.json
  chbench load --port 9000 --port 9001 -c 2 -t 30 < queries.tsv      comparison mode, t-test + rank verdict
  chbench load --target http://localhost:8123 --queries mix.sql --rate 200 --poisson -t 60
  chbench load --port 9000 -c 16 --workers 2 -t 600 --max_threads=1

queries: stdin one per line (--queries-format tsv) or a ';'-separated script (script);
  --queries FILE with '-- name: N' and '-- weight: N' comments for a weighted mix
exit codes: 0 ok, 1 a query failed (see --continue_on_errors), 2 bad input, 3 server lost,
            130 interrupted (the report covers everything measured)
"""


def _flag_value(text: str) -> int:
    """-r / --randomize take an optional 0/1 (clickhouse-benchmark 18.x wants a value)."""
    if text.lower() in ("1", "true", "yes", "on"):
        return 1
    if text.lower() in ("0", "false", "no", "off"):
        return 0
    raise argparse.ArgumentTypeError(f"'{text}' is not 0 or 1")


def confidence(text: str) -> int:
    v = non_negative_int(text)
    if v > 5:
        raise argparse.ArgumentTypeError("must be 0..5 (80, 90, 95, 98, 99, 99.5%)")
    return v


def non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return v


def build_load_parser() -> Parser:
    p = Parser(prog="chbench load", add_help=False, epilog=LOAD_EXAMPLES,
               formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Put load on ClickHouse: clickhouse-benchmark's flags and reports, plus open-loop "
                           "rates, concurrency sweeps, worker processes and comparison verdicts. Any "
                           "--<setting>=value is sent with every query.")
    p.add_argument("--help", action="help", help="show this help")
    q = p.add_argument_group("queries")
    q.add_argument("-q", "--query", action="append", default=[], metavar="SQL", help="a query (repeatable)")
    q.add_argument("--queries", metavar="FILE", help="query file ('-' is stdin); '-- weight: N' weights a query")
    q.add_argument("--queries-format", "--queries_format", dest="queries_format", choices=["tsv", "script", "lines"],
                   help="stdin: tsv (one per line, escaped; default) or script (';'-separated)")
    q.add_argument("-r", "--randomize", nargs="?", const=1, default=0, type=_flag_value,
                   help="random order (weighted by '-- weight:')")
    q.add_argument("--seed", type=non_negative_int, default=0, help="seed for -r, host choice and --poisson")
    c = p.add_argument_group("how much load (clickhouse-benchmark)")
    c.add_argument("-c", "--concurrency", type=positive_int, default=1, help="parallel queries (default 1)")
    c.add_argument("-C", "--max_concurrency", "--max-concurrency", dest="max_concurrency", type=positive_int,
                   help="sweep concurrency 1..N, one report per level, and find the knee")
    c.add_argument("-i", "--iterations", type=non_negative_int, default=0, help="queries to run (0: no limit)")
    c.add_argument("-t", "--timelimit", type=non_negative_float, default=0.0, metavar="SEC",
                   help="stop launching queries after SEC seconds (0: no limit)")
    c.add_argument("-d", "--delay", type=non_negative_float, default=1.0, metavar="SEC",
                   help="seconds between intermediate reports (0: none)")
    c.add_argument("--cumulative", action="store_true", help="intermediate reports over the whole run so far")
    c.add_argument("--confidence", type=confidence, default=5, help="t-test level 0..5: 80,90,95,98,99,99.5%%")
    c.add_argument("--reconnect", nargs="?", const=1, type=non_negative_int, metavar="N",
                   help="open a new connection every N queries (default N=1)")
    c.add_argument("--continue_on_errors", "--continue-on-errors", dest="continue_on_errors", action="store_true")
    c.add_argument("--max-consecutive-errors", "--max_consecutive_errors", dest="max_consecutive_errors",
                   type=non_negative_int, default=0, metavar="N", help="with --continue_on_errors: stop after N")
    c.add_argument("--roundrobin", action="store_true", help="several hosts: spread queries, do not compare")
    c.add_argument("--stage", choices=["complete", "fetch_columns", "with_mergeable_state"], default="complete",
                   help="processing stage (native protocol only)")
    c.add_argument("--query_id_prefix", "--query-id-prefix", dest="query_id_prefix", metavar="PREFIX")
    c.add_argument("--timeout", type=positive_float, metavar="S", help="client-side limit per query")
    c.add_argument("--allow-writes", action="store_true", help="lift the read-only default (readonly=2)")
    c.add_argument("--stacktrace", action="store_true", help=argparse.SUPPRESS)  # accepted for compatibility
    o = p.add_argument_group("beyond clickhouse-benchmark")
    o.add_argument("--rate", type=positive_float, metavar="QPS",
                   help="open loop: start requests at this rate; latency counts from the planned time")
    o.add_argument("--poisson", action="store_true", help="with --rate: Poisson arrivals instead of fixed spacing")
    o.add_argument("--latency-limit", "--latency_limit", dest="latency_limit", type=positive_float, metavar="MS",
                   help="count requests slower than MS")
    o.add_argument("--workers", type=positive_int, default=1,
                   help="spread connections over N processes (histograms merged exactly)")
    o.add_argument("--json", metavar="FILE", help="clickhouse-benchmark's JSON report (keyed by host when comparing)")
    o.add_argument("--out", metavar="FILE", help="chbench results file (every level, histograms, timeline)")
    o.add_argument("--quiet", action="store_true", help="no intermediate reports or live view")
    g = p.add_argument_group("where queries go")
    g.add_argument("-h", "--host", action="append", default=[], help="server host, native protocol (repeatable)")
    g.add_argument("-p", "--port", action="append", default=[], type=positive_int, help="native port (repeatable)")
    g.add_argument("-s", "--secure", action="store_true", help="TLS (certificates are verified)")
    g.add_argument("--target", action="append", default=[], metavar="URL",
                   help="embedded[:/dir], http(s)://host[:port], clickhouse(s)://host[:port] (repeatable)")
    g.add_argument("--user", help="user name (default: 'default')")
    g.add_argument("--database", help="default database")
    g.add_argument("--password-file", metavar="FILE", help="read the password from FILE (else CLICKHOUSE_PASSWORD)")
    g.add_argument("--password", help="the password (shows in the process list: prefer CLICKHOUSE_PASSWORD)")
    g.add_argument("--ca-file", metavar="FILE", help="CA bundle for TLS verification")
    return p


_SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_load_args(argv: list[str]) -> tuple[argparse.Namespace, dict[str, str]]:
    """clickhouse-benchmark accepts any ClickHouse setting as --name=value (or
    --name value): what argparse does not know and looks like that is a setting."""
    parser = build_load_parser()
    args, rest = parser.parse_known_args(argv)
    settings: dict[str, str] = {}
    i = 0
    while i < len(rest):
        a = rest[i]
        if not a.startswith("--"):
            parser.error(f"unrecognized argument: {a}")
        name, eq, value = a[2:].partition("=")
        if not _SETTING_NAME.match(name):
            parser.error(f"unrecognized argument: {a}")
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                parser.error(f"setting --{name} needs a value (--{name}=VALUE)")
            value = rest[i + 1]
            i += 1
        settings[name] = value
        i += 1
    return args, settings


def build_parser() -> Parser:
    parser = Parser(
        prog="chbench",
        description="chbench — honest ClickHouse benchmarks: run a query suite, compare runs with verdicts "
                    "that survive an A/A test.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n  run         measure a query suite on one or two targets\n"
               "  load        put load on a server: clickhouse-benchmark's flags, open loop, sweeps\n"
               "  compare     compare two results files (or the two sides of one)\n"
               "  clickbench  ClickBench: load, run with checksums, compare, stress, crash-test\n"
               "  ingest      insert throughput through each client path, every table verified\n"
               "  read        read throughput through each client path, against two ceilings\n"
               "  report      one self-contained HTML (or Markdown) report of results files\n\n"
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

    ing = sub.add_parser("ingest", help="insert throughput through each client path, with checksums",
                         description="Insert the same deterministic event data set through each client path, "
                                     "each into its own table; verify every table (row count from system.parts, "
                                     "CRC32 of a canonical GROUP BY) and compare with the server's own "
                                     "INSERT … SELECT.",
                         epilog=INGEST_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_connection_args(ing)
    ing.add_argument("--rows", type=positive_int, default=1_000_000, help="rows in the data set (default 1000000)")
    ing.add_argument("--seed", type=int, default=1, help="data set seed (default 1)")
    ing.add_argument("--paths", metavar="LIST", help="comma-separated paths (default: all this target can take)")
    ing.add_argument("--batch-size", default="100000", metavar="N[,N…]",
                     help="rows per batch for batched paths; several values sweep (default 100000)")
    ing.add_argument("--async-insert", action="store_true", help="send with async_insert=1, wait_for_async_insert=1")
    ing.add_argument("--compress", action="store_true", help="compress what is sent (gzip for raw HTTP, lz4 for "
                                                             "the libraries)")
    ing.add_argument("--keep-tables", action="store_true", help="keep the chbench_ingest_* tables afterwards")
    ing.add_argument("--format", choices=["console", "markdown", "json"], default="console")
    ing.add_argument("--out", metavar="FILE", help="results file (JSON)")
    ing.add_argument("--quiet", action="store_true")

    rd = sub.add_parser("read", help="read throughput through each client path, against two ceilings",
                        description="Read the same result through each client path (each in a process of its own: "
                                    "its peak RSS is its own), next to two ceilings measured in the same run: the "
                                    "query with FORMAT Null, and its Native bytes drained without decoding.",
                        epilog=READ_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_connection_args(rd)
    rd.add_argument("--rows", type=positive_int, default=10_000_000, help="rows to read (default 10000000)")
    rd.add_argument("--query", help="the query; {rows} is replaced by --rows (default: "
                                    "SELECT number, toString(number) AS s FROM numbers_mt({rows}))")
    rd.add_argument("--paths", metavar="LIST", help="comma-separated paths (default: all this target can take)")
    rd.add_argument("--max-block-size", type=positive_int, metavar="N", help="max_block_size setting")
    rd.add_argument("--compress", action="store_true", help="compressed transfer (gzip raw HTTP, lz4 libraries)")
    rd.add_argument("--buffer-bytes", type=positive_int, metavar="N",
                    help="clickhouse-connect's read-ahead buffer (http_buffer_size; default 10 MiB) — the one "
                         "client here with such a knob")
    rd.add_argument("--repeat", type=positive_int, default=1, help="runs per path, best kept (default 1)")
    rd.add_argument("--timeout", type=positive_float, default=600.0, metavar="S", help="per path (default 600)")
    rd.add_argument("--format", choices=["console", "markdown", "json"], default="console")
    rd.add_argument("--out", metavar="FILE", help="results file (JSON)")
    rd.add_argument("--quiet", action="store_true")

    sub.add_parser("load", help="put load on a server (clickhouse-benchmark's flags)", add_help=False,
                   description="see 'chbench load --help'")

    cb = sub.add_parser("clickbench", help="ClickBench: load, run with checksums, compare, stress",
                        description="ClickBench: the hits table and its 43 queries, verbatim.",
                        epilog=CLICKBENCH_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    cb_sub = cb.add_subparsers(dest="clickbench_command", metavar="COMMAND", parser_class=Parser)

    cbl = cb_sub.add_parser("load", help="create the hits table and fill it (synthetic rows or a hits file)",
                            description="Create ClickBench's hits table (create.sql verbatim) and fill it: "
                                        "--synthetic ROWS generated by the engine itself, or --from FILE "
                                        "(parquet/tsv/csv, optionally .gz/.zst) parsed by the server. The row "
                                        "count is verified; size on disk from system.parts.")
    add_connection_args(cbl)
    src = cbl.add_mutually_exclusive_group()
    src.add_argument("--synthetic", type=positive_int, metavar="ROWS", help="generate ROWS deterministic rows")
    src.add_argument("--from", dest="from_file", metavar="FILE", help="load a hits file (streamed)")
    cbl.add_argument("--seed", type=int, default=1, help="synthetic data seed (default 1)")
    cbl.add_argument("--batch-rows", type=positive_int, default=250_000, metavar="N",
                     help="synthetic rows per INSERT (each with its deduplication token; default 250000)")
    cbl.add_argument("--format", metavar="FMT", help="input format name for --from (default: from the extension)")
    cbl.add_argument("--replace", action="store_true", help="drop and reload a hits table that already has rows")
    cbl.add_argument("--out", metavar="FILE", help="write the load results (JSON) here, for 'clickbench run'")
    cbl.add_argument("--quiet", action="store_true", help="no progress output")

    cbr = cb_sub.add_parser("run", help="the 43 queries, 3 tries each, with result checksums",
                            description="Run the 43 queries verbatim: try 1 cold (engine caches dropped), "
                                        "then hot; a failed try is null. Every try's result is checksummed.")
    add_connection_args(cbr)
    cbr.add_argument("--out", metavar="FULL.json", help="full results file (default: clickbench-<time>.json)")
    cbr.add_argument("--results", metavar="CLICKBENCH.json", help="also write a results file in ClickBench's format")
    cbr.add_argument("--report", metavar="FILE.md", help="Markdown report (default: next to --out, .md)")
    cbr.add_argument("--tries", type=positive_int, default=3, help="tries per query (default 3)")
    cbr.add_argument("--timeout", type=positive_float, metavar="S", help="per-try limit; a try over it is null")
    cbr.add_argument("--reference", metavar="FULL.json",
                     help="an earlier run's full results: every checksum difference is listed (exit 1)")
    cbr.add_argument("--load-results", metavar="FILE", help="'clickbench load --out' file: load time for the entry")
    cbr.add_argument("--no-cold", action="store_true", help="do not drop caches before the first try")
    cbr.add_argument("--drop-os-cache", action="store_true",
                     help="also drop the OS page cache before the first try (root, local server only)")
    cbr.add_argument("--concurrent", type=positive_int, metavar="N", help="then N connections cycling the queries")
    cbr.add_argument("--duration", type=positive_float, metavar="S", help="seconds of the --concurrent test")
    cbr.add_argument("--seed", type=int, default=1, help="seed of the --concurrent permutations")
    cbr.add_argument("--only", metavar="LIST", help="only these ClickBench query numbers (0-42), e.g. 0,5,42")
    cbr.add_argument("--system", help="'system' in the ClickBench file (default: ClickHouse or chDB)")
    cbr.add_argument("--machine", help="'machine' in the ClickBench file (default: this host's name)")
    cbr.add_argument("--quiet", action="store_true", help="no per-query lines")

    cbc = cb_sub.add_parser("compare", help="compare ClickBench results files and compute the scores",
                            description="Per-query cold and hot times and ClickBench's cold, hot and combined "
                                        "scores (lower is better, 1.00 = the best entry compared). Accepts "
                                        "ClickBench results files and chbench's 'clickbench run' files.",
                            epilog="example:\n  chbench clickbench compare result-a.json result-b.json --format json",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    cbc.add_argument("files", nargs="+", metavar="FILE", help="ClickBench results files (result: 43 x 3 times)")
    cbc.add_argument("--format", choices=["console", "markdown", "json"], default="console")
    cbc.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")

    cbs = cb_sub.add_parser("stress", help="concurrent QPS test; with --ingest, while a writer streams rows",
                            description="N connections, each cycling through its own seeded permutation of the "
                                        "43 queries, for --duration seconds (server targets only). --ingest: "
                                        "the same, once alone and once while a writer streams rows into "
                                        "hits_ingest; latency with and without ingest, ingest rows/s.")
    add_connection_args(cbs)
    cbs.add_argument("--concurrent", type=positive_int, default=4, metavar="N", help="connections (default 4)")
    cbs.add_argument("--duration", type=positive_float, default=30.0, metavar="S", help="seconds per phase")
    cbs.add_argument("--ingest", action="store_true", help="mixed load: queries with and without a writer")
    cbs.add_argument("--seed", type=int, default=1)
    cbs.add_argument("--timeout", type=positive_float, metavar="S", help="per-query limit")
    cbs.add_argument("--out", metavar="FILE", help="results file (JSON, raw latencies)")
    cbs.add_argument("--quiet", action="store_true")

    cbk = cb_sub.add_parser("crash-test", help="kill -9 a server chbench starts, mid-load; check recovery",
                            description="Start a ClickHouse 26.9 server (from the chDB wheel), load synthetic "
                                        "rows uninterrupted for reference, then per cycle: load, kill -9 mid-load, "
                                        "restart, check no acknowledged batch lost and none duplicated, resume "
                                        "with the same deduplication tokens, compare count and checksum.")
    cbk.add_argument("--rows", type=positive_int, default=1_000_000, help="synthetic rows (default 1000000)")
    cbk.add_argument("--cycles", type=positive_int, default=5, help="kill -9 cycles (default 5)")
    cbk.add_argument("--batch-rows", type=positive_int, default=100_000, metavar="N", help="rows per batch")
    cbk.add_argument("--seed", type=int, default=1)
    cbk.add_argument("--out", metavar="FILE", help="results file (JSON)")
    cbk.add_argument("--quiet", action="store_true")

    rep = sub.add_parser("report", help="an HTML (and Markdown) report of results files",
                         description="One self-contained HTML file (charts inline, nothing fetched when viewed) "
                                     "and/or Markdown from results files: a run, two runs or a side-by-side run "
                                     "(a comparison, with the same numbers as 'chbench compare'), load runs, "
                                     "ClickBench files (ours and published ones), ingest and read files.",
                         epilog="examples:\n  chbench report before.json after.json --html report.html --markdown "
                                "report.md\n  chbench report load.json --html load.html\n  chbench report "
                                "full.json result-clickhouse-c8g.4xlarge-20260822.json --html clickbench.html",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("files", nargs="+", metavar="FILE")
    rep.add_argument("--html", metavar="FILE", help="write the HTML report here")
    rep.add_argument("--markdown", metavar="FILE", help="write the Markdown report here")
    rep.add_argument("--threshold", type=percent, default=0.05, help="as in compare (default 5%%)")
    rep.add_argument("--alpha", type=float, default=0.05, help="as in compare")
    rep.add_argument("--correction", choices=["holm", "bh", "none"], default="holm")
    rep.add_argument("--metric", choices=["client_ms", "server_ms"], default="client_ms")
    rep.add_argument("--between-run-factor", type=float, default=0.7, metavar="F", help="as in compare")

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
    cmp_.add_argument("--format", choices=["console", "markdown", "json", "csv", "html"], default="console")
    cmp_.add_argument("--fail-on", choices=["slower", "unstable", "never"], default="slower")
    cmp_.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "load":
        load_args, settings = parse_load_args(argv[1:])

        def command() -> int:
            from chbench.commands.load import cmd_load

            return cmd_load(load_args, settings)

        return _run_command(command)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) == "read":
        args.rows_given = any(a == "--rows" or a.startswith("--rows=") for a in argv)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE

    def chosen() -> int:
        if args.command == "clickbench":
            from chbench.commands.clickbench import cmd_clickbench

            return cmd_clickbench(args)
        if args.command == "report":
            from chbench.commands.report import cmd_report

            return cmd_report(args)
        if args.command == "ingest":
            from chbench.commands.transfer import cmd_ingest

            return cmd_ingest(args)
        if args.command == "read":
            from chbench.commands.transfer import cmd_read

            return cmd_read(args)
        if args.command == "run":
            from chbench.commands.run import cmd_run

            return cmd_run(args)
        from chbench.commands.compare import cmd_compare

        return cmd_compare(args)

    return _run_command(chosen)


def _run_command(command: Callable[[], int]) -> int:
    """Errors meant for people: one line and an exit code, never a traceback."""
    try:
        return command()
    except ChbenchError as e:
        sys.stderr.write(f"chbench: error: {e}\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("chbench: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
