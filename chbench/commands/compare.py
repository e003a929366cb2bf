"""``chbench compare``: two results files (or the two sides of one), query by query."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chbench.commands.args import add_format, add_statistics, add_verbose, compare_options
from chbench.errors import EXIT_FINDING, EXIT_OK
from chbench.results.store import write_report

NAME = "compare"
HELP = "compare two results files (or the two sides of one)"
DESCRIPTION = "Compare two results files (or both sides of one side-by-side file)."
EPILOG = """\
examples:
  chbench compare before.json after.json
  chbench compare ab.json                            a side-by-side file
  chbench compare before.json after.json --format markdown > report.md
  chbench compare old-script.json new-script.json   upgrade-script or clickhouse-benchmark JSON
  chbench compare a.json b.json --threshold 10 --fail-on unstable
  chbench compare before1.json before2.json --vs after.json   several files (sessions) per side
  chbench compare perf.json --method clickhouse      ClickHouse CI's rule (performance tests)
  chbench compare abc.json --baseline B              a run of 3+ targets: B against each, then adjacent pairs

verdicts: slower, faster, no change, unstable, only in A, only in B, failed, fails on B only,
  skipped (a performance test's query that could not run: missing table, unknown setting, …),
  answer changed (files of chbench upgrade)
exit codes: 0 no query slower, 1 some query slower, failing on B only or answering differently,
all slower together beyond what the machine explains (see --fail-on), or not measured because a run
stopped before it (Ctrl-C, a lost server), 2 bad input
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--vs", nargs="+", metavar="FILE",
                   help="several files per side: FILE… are side A, these side B (each file one or more sessions)")
    p.add_argument("--baseline", metavar="SIDE",
                   help="a file of three or more sides: the side the others are judged against (A, B, …, its "
                        "position, or a part of its label; default the first), then each adjacent pair")
    add_statistics(p)
    add_verbose(p)
    add_format(p, ["console", "markdown", "json", "csv", "html"])
    p.add_argument("--fail-on", choices=["slower", "unstable", "never"], default="slower",
                   help="which verdicts make the exit code 1 (default slower)")
    p.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from chbench.compare import build_comparison
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.comparison import comparison_section
    from chbench.ui import say

    exporter = get_exporter(args.format)
    if len(args.files) == 1 and not args.vs and _sides(args.files[0]) > 2:
        return _nway(args, exporter)
    if args.baseline:
        from chbench.errors import UsageError

        raise UsageError("--baseline picks a side of a file of three or more sides")
    cmp = build_comparison(args.files, compare_options(args), vs=args.vs)
    section = comparison_section(cmp, charts=args.format == "html", verbose=args.verbose or None)
    section.title = f"chbench compare: {cmp.doc.a_label} → {cmp.doc.b_label}"
    text = exporter.render(Report("", [section], args.files, data=cmp.doc.to_json()))
    if args.output:
        write_report(args.output, text)
    else:
        sys.stdout.write(text)
    summary = cmp.doc.summary
    shift = summary.shift
    if shift and shift.explained_by_machine and shift.verdict != "no change" and args.format in ("json", "csv"):
        say()(f"warning: {shift.why}")  # the machine's drift, not a regression (the other formats show it)
    verdicts = summary.verdicts
    if args.fail_on == "never":
        return EXIT_OK
    failing = verdicts.get("slower", 0) + (verdicts.get("unstable", 0) if args.fail_on == "unstable" else 0)
    failing += verdicts.get("answer changed", 0) + verdicts.get("fails on B only", 0)
    failing += 1 if shift and shift.finding == "slower" else 0  # all queries slower together: the engine's
    from chbench.compare.sides import not_reached

    unmeasured = not_reached(cmp.doc.queries)
    _say_not_reached(unmeasured)
    failing += len(unmeasured)  # a gate does not pass on a run that stopped before some of its queries
    return EXIT_FINDING if failing else EXIT_OK


def _say_not_reached(names: list[str]) -> None:
    if names:
        from chbench.export.numbers import count

        sys.stderr.write(f"chbench: {count(len(names), 'query')} not measured: a run stopped before "
                         f"{'it' if len(names) == 1 else 'them'} ({', '.join(names[:5])}"
                         f"{' …' if len(names) > 5 else ''}) — exit 1\n")


def _sides(path: str) -> int:
    from chbench.results import RunDocument, open_results

    doc = open_results(path)
    return len(doc.targets) if isinstance(doc, RunDocument) else 1


def _nway(args: argparse.Namespace, exporter: Any) -> int:
    """A file of N sides: every comparison compare/nway.py makes, one section each."""
    from chbench.compare.nway import build_nway
    from chbench.export.sections import Report, Text
    from chbench.report.comparison import comparison_section

    nway = build_nway(args.files[0], compare_options(args), args.baseline)
    sections = []
    for (i, j), cmp in zip(nway.pairs, nway.comparisons, strict=True):
        section = comparison_section(cmp, charts=args.format == "html", verbose=args.verbose or None)
        section.title = f"{nway.kind((i, j))}: {cmp.doc.a_label} → {cmp.doc.b_label}"
        sections.append(section)
    sections[0].blocks.insert(0, Text(f"{len(nway.labels)} sides, {len(nway.pairs)} comparisons (the baseline "
                                      f"{nway.labels[nway.baseline]} against each, then adjacent pairs), each at "
                                      f"alpha {nway.alpha:g} / {len(nway.pairs)}"))
    text = exporter.render(Report(f"chbench compare: {args.files[0]}", sections, args.files, data=nway.to_json()))
    if args.output:
        write_report(args.output, text)
    else:
        sys.stdout.write(text)
    if args.fail_on == "never":
        return EXIT_OK
    _say_not_reached(nway.not_reached())
    return EXIT_FINDING if nway.failing(args.fail_on) else EXIT_OK
