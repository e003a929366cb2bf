"""What every command's arguments are made of: the parser (usage errors are one line and
exit 2), argument types, and the flag groups commands share — connection, statistics,
output — each declared once."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from chbench.errors import EXIT_USAGE
from chbench.targets.url import SCHEMES


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, and an epilog may be
    computed when help is asked for (``epilog_fn``: path lists from the registries)."""

    def __init__(self, *args: Any, epilog_fn: Callable[[], str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_fn = epilog_fn

    def format_help(self) -> str:
        if self.epilog_fn is not None:
            self.epilog = self.epilog_fn()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"chbench: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def add_command(sub: Any, module: ModuleType) -> Parser:
    """One command's parser, from its module: name, help, description, epilog, arguments."""
    p: Parser = sub.add_parser(
        module.NAME, help=module.HELP, description=module.DESCRIPTION, epilog=getattr(module, "EPILOG", None),
        epilog_fn=getattr(module, "epilog", None), formatter_class=argparse.RawDescriptionHelpFormatter,
        **getattr(module, "PARSER", {}))
    module.add_arguments(p)
    p.set_defaults(_command=module, _parser=p)
    return p


# -- argument types ---------------------------------------------------------------------

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


def _number(positive: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not math.isfinite(v):  # inf reached json.dumps and int() as tracebacks
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if positive and not v > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        if not positive and v < 0:
            raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
        return v

    return parse


positive_float = _number(positive=True)
non_negative_float = _number(positive=False)


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


def probability(text: str) -> float:
    """A significance level: 0.05 or 5%, strictly between 0 and 1 (``--alpha 5`` was taken as
    5 and ``--alpha 0`` divided by zero)."""
    raw = text.strip()
    try:
        v = float(raw.rstrip("%")) / (100 if raw.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a probability") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1 (0.05 or 5%), got {text}")
    return v


def setting(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"'{text}' is not name=value")
    k, v = text.split("=", 1)
    if not k.strip().replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"'{k}' is not a setting name")
    return k.strip(), v.strip()


def flag_value(text: str) -> int:
    """An optional 0/1 after a switch (clickhouse-benchmark 18.x's -r wants a value)."""
    if text.lower() in ("1", "true", "yes", "on"):
        return 1
    if text.lower() in ("0", "false", "no", "off"):
        return 0
    raise argparse.ArgumentTypeError(f"'{text}' is not 0 or 1")


# -- shared flag groups -----------------------------------------------------------------

TARGET_HELP = f"{SCHEMES} (repeatable; default: the embedded engine)"
PASSWORD_HELP = "password: CLICKHOUSE_PASSWORD or --password-file FILE (never put it in the URL)"


def add_connection(p: argparse.ArgumentParser, target_help: str = TARGET_HELP, short: bool = False,
                   who: str = "--user") -> None:
    """Where queries go and who connects. ``short`` adds clickhouse-benchmark's one-letter
    spellings (-h host, -p port, -s secure: its parser has no -h for help); ``who`` names
    the user flag (``capture`` keeps ``--user``/``--database`` for its filters: its
    connection's are ``--connect-user``/``--connect-database``)."""
    g = p.add_argument_group("where queries go")
    g.add_argument("--target", action="append", metavar="URL", default=[], help=target_help)
    g.add_argument(*(["-h"] if short else []), "--host", action="append", default=[],
                   help="server host (repeatable; native protocol unless --http)")
    g.add_argument(*(["-p"] if short else []), "--port", action="append", default=[], type=positive_int,
                   help="server port (repeatable)")
    g.add_argument("--http", action="store_true", help="with --host/--port: the HTTP interface")
    g.add_argument(*(["-s"] if short else []), "--secure", action="store_true",
                   help="TLS (certificates are verified)")
    g.add_argument(who, dest="user", help="user name (default: 'default')")
    g.add_argument(who.replace("user", "database"), dest="database", help="default database")
    g.add_argument("--password-file", metavar="FILE", help="read the password from FILE (else CLICKHOUSE_PASSWORD)")
    g.add_argument("--password", help="the password (shows in the process list: prefer CLICKHOUSE_PASSWORD)")
    g.add_argument("--ca-file", metavar="FILE", help="CA bundle for TLS verification")


def add_tests(g: argparse._ArgumentGroup) -> None:
    """ClickHouse's performance tests as the workload (run, upgrade)."""
    g.add_argument("--tests", nargs="+", metavar="PATH",
                   help="ClickHouse performance tests (tests/performance/*.xml format): files, directories, globs")
    g.add_argument("--tests-filter", metavar="REGEX", help="only tests whose name matches")
    g.add_argument("--long", action="store_true", help="also run tests tagged long")
    g.add_argument("--max-queries", type=positive_int, metavar="N",
                   help="at most N queries per test, chosen at random (with --seed)")
    g.add_argument("--seed", type=non_negative_int, default=0, help="for --max-queries (default 0)")


def test_options(args: argparse.Namespace) -> Any:
    """The performance-test flags as the workload's options."""
    from chbench.workload import PerfTestOptions

    return PerfTestOptions(filter=args.tests_filter, long=args.long, max_queries=args.max_queries, seed=args.seed)


def add_statistics(p: argparse.ArgumentParser, verdict_only: bool = False) -> None:
    """How two sides are compared (compare, report); ``verdict_only``: the threshold and
    the false-alarm control alone (replay: both sides measured in one run, by service time)."""
    g = p.add_argument_group("statistics (docs/statistics.md)")
    g.add_argument("--threshold", type=percent, default=0.05, help="smallest change worth a verdict (default 5%%)")
    g.add_argument("--alpha", type=probability, default=0.05, help="significance level after correction (default 0.05)")
    g.add_argument("--correction", choices=["holm", "bh", "none"], default="holm",
                   help="false-alarm control across queries (default holm)")
    if verdict_only:
        return
    g.add_argument("--metric", choices=["client_ms", "server_ms"], default="client_ms")
    g.add_argument("--method", choices=["chbench", "clickhouse"], default="chbench",
                   help="decision rule: chbench's (default) or ClickHouse CI's randomization test on medians "
                        "(docs/statistics.md)")
    g.add_argument("--between-run-factor", type=non_negative_float, default=None, metavar="F",
                   help="two separate runs of one session each: allow for each run shifting a query's median by "
                        "F x its run-to-run spread (MAD) instead of measuring that shift as the queries' scatter "
                        "around their common level (the default, with 6 queries or more; F = 0.8 with fewer); "
                        "0 turns it off")
    g.add_argument("--no-round-factors", action="store_true",
                   help="separate runs: keep each round's machine factor in the times (docs/statistics.md)")
    g.add_argument("--unpaired", action="store_true",
                   help="side by side: pool each side's runs instead of pairing them round by round")


def add_warmup(g: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    g.add_argument("--warmup", type=non_negative_int, metavar="N",
                   help="untimed runs per query and side (default: 1, or past ClickHouse's JIT compile where it is "
                        "on: 4 on today's defaults; docs/run.md)")


def add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true",
                   help="print each query's full reasoning, its flags and the machine probes (the console and "
                        "Markdown tables give one short reason and the findings)")


def add_format(p: argparse.ArgumentParser, choices: list[str], default: str = "console") -> None:
    p.add_argument("--format", choices=choices, default=default, help=f"output format (default {default})")


def add_quiet(p: argparse.ArgumentParser | argparse._ArgumentGroup, what: str = "no progress output") -> None:
    p.add_argument("--quiet", action="store_true", help=what)


def compare_options(args: argparse.Namespace) -> Any:
    """The statistics flags as the comparison's options."""
    from chbench.compare import CompareOptions

    return CompareOptions(metric=args.metric, threshold=args.threshold, alpha=args.alpha,
                          correction=args.correction, between_run_factor=args.between_run_factor,
                          method=args.method, paired=not getattr(args, "unpaired", False),
                          round_factors=not getattr(args, "no_round_factors", False))


def suite_outputs(args: argparse.Namespace, kind: str) -> str:
    """``upgrade`` and ``trend``: the engines dir for this command, --queries/--tests and
    --suite clickbench not both, the results file (default ``chbench-KIND-<time>.json``)
    and --html's directory checked before anything is measured; the results path."""
    from datetime import datetime

    from chbench.commands.engines import use_engines_dir
    from chbench.errors import UsageError
    from chbench.results import check_output_path
    from chbench.results.store import check_directory

    use_engines_dir(args)
    if (args.queries or args.tests or args.query) and args.suite == "clickbench":
        raise UsageError("give --queries/--query/--tests or --suite clickbench, not both")
    out: str = args.out or f"chbench-{kind}-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    check_output_path(out)
    if args.html:
        check_directory(args.html)
    return out


def add_suite(w: argparse._ArgumentGroup, each: str) -> None:
    """What ``upgrade`` and ``trend`` run: a suite, your queries or performance tests, and
    the set-up that builds your data on ``each`` side or version."""
    w.add_argument("--suite", choices=["builtin", "clickbench"], default="builtin",
                   help="built-in suite (default) or ClickBench's 43 queries on a synthetic hits table")
    w.add_argument("--queries", metavar="FILE", help="your own queries instead of a suite")
    w.add_argument("-q", "--query", action="append", default=[], metavar="SQL",
                   help="a query instead of a suite (repeatable; with --queries, added to them)")
    add_tests(w)
    w.add_argument("--setup", metavar="FILE", help=f"statements that build your data (run on each {each}, untimed)")
    w.add_argument("--rows", type=positive_int, default=1_000_000, help="--suite clickbench: hits rows (default 1M)")
    w.add_argument("--scale", type=positive_float, default=1.0, help="built-in suite: multiply its row counts")
