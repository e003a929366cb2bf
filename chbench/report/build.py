"""What a report of results files shows: each file opened once (``results.open``),
sorted by kind, and turned into sections. Comparisons come from the same function as
``chbench compare`` and ClickBench scores from the same as ``chbench clickbench
compare``, so every number in a report is the number those commands print.
"""

from __future__ import annotations

from pathlib import Path

from chbench.clickbench.scores import score
from chbench.compare import CompareOptions, build_comparison, sides_of
from chbench.errors import UsageError
from chbench.export.sections import Report, Section
from chbench.report.clickbench import scores_section
from chbench.report.comparison import comparison_section
from chbench.report.load import load_section
from chbench.report.replay import replay_section
from chbench.report.run import run_section
from chbench.report.transfer import transfer_section
from chbench.results import (
    ClickBenchEntry,
    ClickBenchRunDocument,
    ClickHouseBenchmarkFile,
    LoadDocument,
    ReplayDocument,
    ResultsFile,
    RunDocument,
    TransferDocument,
    UpgradeScriptFile,
    entry_of,
    open_results,
)

COMPARABLE = (RunDocument, UpgradeScriptFile, ClickHouseBenchmarkFile)


def build_report(files: list[str], opts: CompareOptions | None = None) -> Report:
    if not files:
        raise UsageError("give at least one results file")
    opened: list[tuple[str, ResultsFile]] = [(f, open_results(f)) for f in files]
    for f, doc in opened:
        if not isinstance(doc, (*COMPARABLE, LoadDocument, ReplayDocument, ClickBenchEntry, ClickBenchRunDocument,
                                TransferDocument)):
            raise UsageError(f"{f}: a chbench '{getattr(doc, 'kind', '?')}' file has no report (report takes run, "
                             "load, replay, clickbench, ingest and read files)")
    sections: list[Section] = []
    comparable = [(f, d) for f, d in opened if isinstance(d, COMPARABLE)]
    if len(comparable) > 2:
        raise UsageError(f"a report compares at most two run files, got {len(comparable)}")
    if comparable:
        one_sided = len(comparable) == 1 and len(sides_of(*comparable[0], opts.metric if opts else "client_ms")
                                                 .sides) < 2
        if not one_sided:
            sections.append(comparison_section(build_comparison([f for f, _ in comparable], opts)))
        sections += [run_section(f, d) for f, d in comparable if isinstance(d, RunDocument)]
    sections += [load_section(f, d) for f, d in opened if isinstance(d, LoadDocument)]
    sections += [replay_section(f, d) for f, d in opened if isinstance(d, ReplayDocument)]
    entries = [(f, d) for f, d in opened if isinstance(d, (ClickBenchEntry, ClickBenchRunDocument))]
    if entries:
        sections.append(scores_section(score([entry_of(f, d) for f, d in entries])))
    sections += [transfer_section(d, f) for f, d in opened if isinstance(d, TransferDocument)]
    return Report("chbench report: " + ", ".join(Path(f).name for f in files), sections, files)
