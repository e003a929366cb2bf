"""``chbench explain``: why each slower or faster query changed, from the server's own
counters and operator times recorded with the runs (chbench/explain)."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import add_format, add_statistics, compare_options, positive_int
from chbench.errors import EXIT_FINDING, EXIT_OK, UsageError
from chbench.results.store import write_report

NAME = "explain"
HELP = "why each slower or faster query changed (server counters and operator times)"
DESCRIPTION = ("Explain each slower or faster query of a comparison by what the server recorded for every run: "
               "its ProfileEvents counters and query_log numbers, and each operator's time "
               "(system.processors_profile_log), compared between the sides like the time itself.")
EPILOG = """\
examples:
  chbench explain ab.json                          a side-by-side file: every changed query
  chbench explain before.json after.json           two separate runs
  chbench explain ab.json --query aggregation      one query, whatever its verdict
  chbench explain ab.json --format json            rows with "why": {"counters", "operators", "summary"}
  chbench explain ab.json --format html --output why.html   operator times side by side, changed counters

the runs need their server profiles: chbench run collects them after the rounds (untimed)
unless --no-explain; servers without system.query_log (the embedded engine) have none.
exit codes: 0 no query slower, 1 some query slower, 2 bad input
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--vs", nargs="+", metavar="FILE", help="several files per side: FILE… are A, these B")
    p.add_argument("--query", action="append", metavar="NAME", help="explain this query, whatever its verdict "
                   "(repeatable)")
    p.add_argument("--top", type=positive_int, default=5, metavar="N", help="explanations shown per query (default 5)")
    add_statistics(p)
    add_format(p, ["console", "markdown", "json", "html"])
    p.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from chbench.compare import build_comparison
    from chbench.explain.build import explain_rows, side_info
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.explain import explain_section
    from chbench.stats.verdict import FLAGGED

    cmp = build_comparison(args.files, compare_options(args), vs=args.vs)
    names = {r.name for r in cmp.doc.queries}
    for q in args.query or []:
        if q not in names:
            raise UsageError(f"no query named {q!r} in these files (they have: {', '.join(sorted(names)[:8])} …)")
    whys = explain_rows(cmp.doc, cmp.a, cmp.b, cmp.rename, cmp.paired, every=bool(args.query))
    if args.query:
        whys = {n: w for n, w in whys.items() if n in args.query}
    else:
        whys = {r.name: whys[r.name] for r in cmp.doc.queries if r.verdict in FLAGGED and r.name in whys}
    info = side_info(cmp)
    rows = [r for r in cmp.doc.queries if not args.query or r.name in args.query]
    data = {"kind": "explain", "files": args.files, "sides": info,
            "queries": [{"name": r.name, "verdict": r.verdict, "ratio": r.ratio, "ci": list(r.ci) if r.ci else None,
                         **({"why": whys[r.name].to_json()} if r.name in whys and (r.verdict in FLAGGED or args.query)
                            else {"why": r.why} if r.why and r.verdict in FLAGGED else {})}
                        for r in rows]}
    section = explain_section(cmp, whys, charts=args.format == "html", info=info, top=args.top, asked=args.query)
    section.title = f"chbench explain: {cmp.doc.a_label} → {cmp.doc.b_label}"
    text = get_exporter(args.format).render(Report("", [section], args.files, data=data))
    if args.output:
        write_report(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_FINDING if cmp.doc.summary.verdicts.get("slower", 0) else EXIT_OK
