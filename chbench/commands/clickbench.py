"""``chbench clickbench``: ClickBench results files compared and scored.

(Loading the hits table, running the 43 queries with checksums and the stress tests are
issue 4's remaining parts; only ``compare`` exists so far.)"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chbench.clickbench.results import load_entry, score
from chbench.errors import EXIT_OK, UsageError
from chbench.export import get_exporter


def cmd_clickbench(args: argparse.Namespace) -> int:
    if args.clickbench_command != "compare":
        raise UsageError("use 'chbench clickbench compare FILE...'")
    entries = [load_entry(f) for f in args.files]
    text = get_exporter(args.format).clickbench(score(entries))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK
