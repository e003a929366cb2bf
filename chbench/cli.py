"""Command line: the parser built from the command registry (``chbench/commands``), and
the one wrapper that turns errors into one line and an exit code.

Data flows one way: cli → command → plan (workload × targets × settings) → runner →
target → samples → results document → stats → report sections → exporters."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from chbench import __version__
from chbench.commands import COMMANDS
from chbench.commands.args import Parser, add_command
from chbench.errors import EXIT_USAGE, ChbenchError
from chbench.outcome import Outcome

QUICK_START = """\
quick start:
  chbench run --out before.json && chbench run --out after.json && chbench compare before.json after.json
"""


def build_parser() -> Parser:
    parser = Parser(
        prog="chbench",
        description="chbench — honest ClickHouse benchmarks: run a query suite, compare runs with verdicts "
                    "that survive an A/A test.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=QUICK_START)
    parser.add_argument("--version", action="version", version=f"chbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        add_command(sub, importlib.import_module(f"chbench.commands.{name}"))
    return parser


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The parsed command line; None when no command was given (help was printed)."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if not getattr(args, "_command", None):
        parser.print_help()
        return None
    module, command_parser = args._command, args._parser
    settings_from = getattr(module, "settings_from", None)
    if settings_from is not None:
        args.settings = settings_from(rest, command_parser)
    elif rest:
        command_parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(list(sys.argv[1:] if argv is None else argv))
    if args is None:
        return EXIT_USAGE
    return run_command(lambda: int(args._command.run(args)))


def run_command(command: Any) -> int:
    """Errors meant for people: one line and an exit code, never a traceback."""
    try:
        return int(command())
    except ChbenchError as e:
        sys.stderr.write(f"chbench: error: {e}\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("chbench: interrupted\n")
        return Outcome.INTERRUPTED.exit_code
    except BrokenPipeError:
        return 0
