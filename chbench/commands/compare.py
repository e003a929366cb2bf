"""``chbench compare``: load results files, match queries, compare, render."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from chbench.errors import EXIT_FINDING, EXIT_OK, UsageError
from chbench.export import get_exporter
from chbench.results import load_results
from chbench.results.load import Side
from chbench.stats.compare import Options, compare_queries, machine_change


def _norm(sql: str | None) -> str:
    return " ".join((sql or "").split()).lower()


def match_names(a: Side, b: Side) -> tuple[list[str], dict[str, str]]:
    """Names in report order and B's renames: matched by name, then by SQL."""
    rename: dict[str, str] = {}
    unmatched_a = {_norm(d.sql): n for n, d in a.queries.items() if n not in b.queries and d.sql}
    for n, d in b.queries.items():
        if n not in a.queries and d.sql and _norm(d.sql) in unmatched_a:
            rename[n] = unmatched_a.pop(_norm(d.sql))
    names = list(a.queries)
    names += [n for n in b.queries if n not in a.queries and n not in rename]
    return names, rename


def build_comparison(files: list[str], metric: str = "client_ms", threshold: float = 0.05, alpha: float = 0.05,
                     correction: str = "holm", between_run_factor: float = 0.7) -> tuple[dict[str, Any], Side, Side]:
    """The comparison document ``chbench compare --format json`` prints, with both sides
    (their raw samples) for reports that plot them."""
    notes: list[str] = []
    if len(files) == 1:
        loaded = load_results(files[0], metric)
        if len(loaded.sides) < 2:
            raise UsageError(f"{files[0]} holds one side only: give two results files to compare")
        side_a, side_b = loaded.sides[0], loaded.sides[1]
        formats = [loaded.format]
        statuses = [loaded.status]
        separate = False
    elif len(files) == 2:
        la, lb = load_results(files[0], metric), load_results(files[1], metric)
        for l_ in (la, lb):
            if len(l_.sides) > 1:
                notes.append(f"{l_.path} holds {len(l_.sides)} sides; its first ({l_.sides[0].label}) is compared")
        side_a, side_b = la.sides[0], lb.sides[0]
        side_a.label = f"{Path(files[0]).name} ({side_a.label})"
        side_b.label = f"{Path(files[1]).name} ({side_b.label})"
        formats = [la.format, lb.format]
        statuses = [la.status, lb.status]
        separate = True
    else:
        raise UsageError(f"compare takes one side-by-side file or two files, got {len(files)}")
    for f, st in zip(files, statuses, strict=True):
        if st != "complete":
            notes.append(f"{f} is incomplete (status: {st}): only what it holds is compared")
    if any(f == "chbench-load" for f in formats):
        notes.append("a load run: latencies come from its histograms (within 0.4%), in no particular order, "
                     "measured under concurrency")
    if any(f not in ("chbench", "chbench-load") for f in formats):
        notes.append("a file holds summary numbers only (no raw samples): its verdicts are weaker, from "
                     "percentile ranges rather than a statistical test")
    names, rename = match_names(side_a, side_b)
    b_queries = {rename.get(n, n): d for n, d in side_b.queries.items()}
    if not set(side_a.queries) & set(b_queries):
        raise UsageError("the results have no query in common (matched by name, then by SQL)")
    machine = None
    if separate:
        machine = machine_change(side_a.calibration, side_b.calibration)
        if machine is None and formats == ["chbench", "chbench"]:
            notes.append("no calibration samples: the machine's own drift between the runs is unknown")
        if machine is None:
            notes.append("separate runs: drift of the machine between them cannot be told from a change; "
                         "a side-by-side run (two --target, or --setting-b/--scale-b) is more trustworthy")
    opts = Options(threshold=threshold, alpha=alpha, correction=correction)
    if separate and formats == ["chbench", "chbench"]:
        opts.between_run = between_run_factor
    doc = compare_queries(names, side_a.queries, b_queries, opts, machine)
    doc["a_label"], doc["b_label"] = side_a.label, side_b.label
    doc["files"] = files
    doc["metric"] = metric
    doc["notes"] = notes
    return doc, side_a, side_b


def cmd_compare(args: argparse.Namespace) -> int:
    files = args.files
    doc, _, _ = build_comparison(files, args.metric, args.threshold, args.alpha, args.correction,
                                 args.between_run_factor)
    text = get_exporter(args.format).comparison(doc)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    verdicts = doc["summary"]["verdicts"]
    if args.fail_on == "never":
        return EXIT_OK
    failing = verdicts.get("slower", 0) + (verdicts.get("unstable", 0) if args.fail_on == "unstable" else 0)
    return EXIT_FINDING if failing else EXIT_OK
