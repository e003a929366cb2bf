"""``chbench clickbench compare``: ClickBench's scores of results files."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import add_format
from chbench.errors import EXIT_OK
from chbench.results.store import write_report

NAME = "compare"
HELP = "compare ClickBench results files and compute the scores"
DESCRIPTION = ("Per-query cold and hot times and ClickBench's cold, hot and combined scores (lower is better, "
               "1.00 = the best entry compared). Accepts ClickBench results files and chbench's 'clickbench run' "
               "files.")
EPILOG = "example:\n  chbench clickbench compare result-a.json result-b.json --format json\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="ClickBench results files (result: 43 x 3 times)")
    add_format(p, ["console", "markdown", "json", "html"])
    p.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from chbench.clickbench.scores import score
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.clickbench import scores_section
    from chbench.results import open_clickbench_entry

    exporter = get_exporter(args.format)
    doc = score([open_clickbench_entry(f) for f in args.files])
    text = exporter.render(Report("", [scores_section(doc, charts=args.format == "html")], args.files, data=doc))
    if args.output:
        write_report(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK
