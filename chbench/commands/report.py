"""``chbench report``: results files → one self-contained HTML file and/or Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chbench.errors import EXIT_OK, UsageError
from chbench.export import get_exporter
from chbench.report.model import build_report


def cmd_report(args: argparse.Namespace) -> int:
    if not args.html and not args.markdown:
        raise UsageError("say where the report goes: --html FILE and/or --markdown FILE")
    for out in (args.html, args.markdown):
        if out and not Path(out).resolve().parent.is_dir():
            raise UsageError(f"cannot write {out}: directory {Path(out).resolve().parent} does not exist")
    model = build_report(args.files, args.threshold, args.alpha, args.correction, args.metric,
                         args.between_run_factor)
    if args.html:
        text = get_exporter("html").report(model)
        Path(args.html).write_text(text, encoding="utf-8")
        sys.stderr.write(f"chbench: report written to {args.html} ({len(text.encode()) / 1e6:.2f} MB)\n")
    if args.markdown:
        Path(args.markdown).write_text(get_exporter("markdown").report(model), encoding="utf-8")
        sys.stderr.write(f"chbench: report written to {args.markdown}\n")
    return EXIT_OK
