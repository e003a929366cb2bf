"""What a report of results files shows: each file opened once (``results.open``),
sorted by kind, and turned into sections. Comparisons come from the same function as
``chbench compare`` and ClickBench scores from the same as ``chbench clickbench
compare``, so every number in a report is the number those commands print.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chbench.clickbench.scores import score
from chbench.compare import CompareOptions, build_comparison, sides_of
from chbench.errors import UsageError
from chbench.export.sections import Report, Section
from chbench.report.bisect import bisect_section
from chbench.report.clickbench import crash_test_section, scores_section, stress_section
from chbench.report.clickbench import load_section as clickbench_load_section
from chbench.report.comparison import comparison_section
from chbench.report.load import load_section
from chbench.report.replay import replay_section
from chbench.report.run import run_section
from chbench.report.summary import summary_section
from chbench.report.transfer import transfer_section
from chbench.results import (
    BisectDocument,
    ClickBenchEntry,
    ClickBenchLoadDocument,
    ClickBenchRunDocument,
    ClickHouseBenchmarkFile,
    CrashTestDocument,
    LoadDocument,
    ReplayDocument,
    ResultsFile,
    RunDocument,
    StressDocument,
    TransferDocument,
    UpgradeScriptFile,
    entry_of,
    open_results,
)

COMPARABLE = (RunDocument, UpgradeScriptFile, ClickHouseBenchmarkFile)
# ClickBench's other files: each its own section, as its command prints it
CLICKBENCH_OTHERS: dict[type, Callable[[Any], Section]] = {
    StressDocument: stress_section, ClickBenchLoadDocument: clickbench_load_section,
    CrashTestDocument: crash_test_section}


def build_report(files: list[str], opts: CompareOptions | None = None) -> Report:
    if not files:
        raise UsageError("give at least one results file")
    opened: list[tuple[str, ResultsFile]] = [(f, open_results(f)) for f in files]
    for f, doc in opened:
        if not isinstance(doc, (*COMPARABLE, LoadDocument, ReplayDocument, ClickBenchEntry, ClickBenchRunDocument,
                                TransferDocument, BisectDocument, *CLICKBENCH_OTHERS)):
            raise UsageError(f"{f}: a chbench '{getattr(doc, 'kind', '?')}' file has no report (report takes run, "
                             "load, replay, clickbench (run, load, stress, crash-test), ingest, read and bisect "
                             "files)")
    sections: list[Section] = []
    comparable = [(f, d) for f, d in opened if isinstance(d, COMPARABLE)]
    if len(comparable) > 2:
        raise UsageError(f"a report compares at most two run files, got {len(comparable)} "
                         f"({', '.join(f for f, _ in comparable)}): give the two to compare, or report each apart")
    if comparable:
        n_sides = len(sides_of(*comparable[0], opts.metric if opts else "client_ms").sides)
        compared = False
        if len(comparable) == 1 and n_sides > 2:  # N-way: a trend, or every pair compare judges
            sections += _nway_sections(*comparable[0], opts)
        elif not (len(comparable) == 1 and n_sides < 2):
            sections.append(comparison_section(build_comparison([f for f, _ in comparable], opts)))
            compared = True
        # the comparison draws each query's samples of both runs: the runs' sections do not
        # draw them again (two runs of 400 queries: 2,401 charts in 66 s here, 801 without)
        sections += [run_section(f, d, charts=not compared) if isinstance(d, RunDocument)
                     else summary_section(sides_of(f, d)) for f, d in comparable]
    # two load files, or two replays, and nothing else to compare: compared as compare does
    alike = [(f, d) for f, d in opened if isinstance(d, (LoadDocument, ReplayDocument))]
    if not comparable and len(alike) == 2 and type(alike[0][1]) is type(alike[1][1]):
        sections.append(comparison_section(build_comparison([f for f, _ in alike], opts)))
    sections += [bisect_section(d, f) for f, d in opened if isinstance(d, BisectDocument)]
    sections += [load_section(f, d) for f, d in opened if isinstance(d, LoadDocument)]
    sections += [replay_section(f, d) for f, d in opened if isinstance(d, ReplayDocument)]
    entries = [(f, d) for f, d in opened if isinstance(d, (ClickBenchEntry, ClickBenchRunDocument))]
    if entries:
        sections.append(scores_section(score([entry_of(f, d) for f, d in entries])))
    sections += [transfer_section(d, f) for f, d in opened if isinstance(d, TransferDocument)]
    for f, d in opened:
        if type(d) in CLICKBENCH_OTHERS:
            section = CLICKBENCH_OTHERS[type(d)](d)
            section.title += f": {Path(f).name}"
            sections.append(section)
    return Report("chbench report: " + ", ".join(Path(f).name for f in files), sections, files)


def _nway_sections(path: str, doc: ResultsFile, opts: CompareOptions | None) -> list[Section]:
    """A run of N sides: its trend (chbench trend), else one section per pair compare judges."""
    from chbench.compare.nway import build_nway
    from chbench.report.trend import trend_section

    if isinstance(doc, RunDocument) and doc.trend:
        return [trend_section(doc, path, charts=True)]
    nway = build_nway(path, opts)
    out = []
    for (i, j), cmp in zip(nway.pairs, nway.comparisons, strict=True):
        section = comparison_section(cmp)
        section.title = f"{nway.kind((i, j))}: {cmp.doc.a_label} → {cmp.doc.b_label}"
        out.append(section)
    return out
