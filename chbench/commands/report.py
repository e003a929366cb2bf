"""``chbench report``: results files → one self-contained HTML file and/or Markdown."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import add_statistics, compare_options
from chbench.errors import EXIT_OK, UsageError

NAME = "report"
HELP = "one self-contained HTML (or Markdown) report of results files"
DESCRIPTION = ("One self-contained HTML file (charts inline, nothing fetched when viewed) and/or Markdown from "
               "results files: a run, two runs or a side-by-side run (a comparison, with the same numbers as "
               "'chbench compare'), load runs, ClickBench files (ours and published ones), ingest and read files.")
EPILOG = """\
examples:
  chbench report before.json after.json --html report.html --markdown report.md
  chbench report load.json --html load.html
  chbench report full.json result-clickhouse-c8g.4xlarge-20260822.json --html clickbench.html
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--html", metavar="FILE", help="write the HTML report here")
    p.add_argument("--markdown", metavar="FILE", help="write the Markdown report here")
    add_statistics(p)


def run(args: argparse.Namespace) -> int:
    from chbench.export import get_exporter
    from chbench.report.build import build_report
    from chbench.results.store import check_directory, write_report

    if not args.html and not args.markdown:
        raise UsageError("say where the report goes: --html FILE and/or --markdown FILE")
    for out in (args.html, args.markdown):
        if out:
            check_directory(out)
    report = build_report(args.files, compare_options(args))
    for path, fmt in ((args.html, "html"), (args.markdown, "markdown")):
        if path:
            text = get_exporter(fmt).render(report)
            write_report(path, text)
            size = f" ({len(text.encode()) / 1e6:.2f} MB)" if fmt == "html" else ""
            sys.stderr.write(f"chbench: report written to {path}{size}\n")
    return EXIT_OK
