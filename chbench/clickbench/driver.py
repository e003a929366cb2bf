"""``clickbench run`` as library code: the 43 queries with their checksums (and the
concurrent test), the ClickBench entry, the reference comparison — written into a
``ClickBenchRunDocument`` through its writer after every try."""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from chbench.clickbench import data_text, workload
from chbench.clickbench.runner import CacheDropper, QueryOutcome, compare_with_reference, run_queries
from chbench.clickbench.stress import Connect, require_server
from chbench.clickbench.stress import concurrent as run_concurrent
from chbench.errors import EXIT_FINDING, EXIT_OK
from chbench.export.numbers import count
from chbench.results import ClickBenchEntry, ClickBenchRunDocument, ResultsWriter
from chbench.targets import Target

Say = Callable[[str], None]


@dataclass
class RunOptions:
    tries: int = 3
    timeout: float | None = None
    cold: bool = True
    drop_os_cache: bool = False
    concurrent: int | None = None  # then this many connections cycling the queries
    duration: float | None = None  # seconds of the concurrent test
    seed: int = 1
    only: list[int] | None = None  # 1-based query numbers
    system: str | None = None  # for the ClickBench entry
    machine: str | None = None
    reference: ClickBenchRunDocument | None = None
    reference_path: str | None = None


@dataclass
class RunVerdict:
    exit_code: int = EXIT_OK
    messages: list[str] = field(default_factory=list)  # findings, for stderr


def default_system(target: Target) -> tuple[str, list[str]]:
    """The system and tags of the entry, as ClickBench's published results name them."""
    system = "chDB" if target.capabilities.in_process else "ClickHouse"
    tags = dict(line.split("\t", 1) for line in data_text("tags.tsv").splitlines() if line.strip())
    return system, [t.strip() for t in tags[system].split(",")]


def make_entry(target: Target, doc: ClickBenchRunDocument, outcomes: list[QueryOutcome],
               opts: RunOptions) -> ClickBenchEntry:
    """A results file in ClickBench's own shape (../shared/clickbench/result-*.json)."""
    system, tags = default_system(target)
    load, conc = doc.load, doc.concurrent

    def seconds(v: float | None) -> float | None:
        return None if v is None else max(0.001, round(v, 3))

    by_index = {o.index: o for o in outcomes}
    result = []
    for i in range(1, 44):
        o = by_index.get(i)
        row = [seconds(s) for s in o.seconds] if o else []
        result.append(row + [None] * (opts.tries - len(row)))
    synthetic = bool(load) and str((load or {}).get("source", "")).startswith("synthetic")
    header = {
        "system": opts.system or system, "date": date.today().isoformat(),
        "machine": opts.machine or platform.node() or "unknown", "cluster_size": 1, "proprietary": "no",
        "hardware": "cpu", "tuned": "no", "tags": tags + (["synthetic data"] if synthetic else []),
        "load_time": None if not load else round(float(load["seconds"]), 3),
        "data_size": doc.table.get("data_size"),
        "concurrent_qps": None if not conc else round(conc["qps"], 3),
        "concurrent_error_ratio": None if not conc else round(conc["error_ratio"], 3),
    }
    return ClickBenchEntry(header=header, result=result)


def _progress_line(o: QueryOutcome) -> str:
    shown = " ".join("null" if v is None else f"{v:.3f}" for v in o.seconds)
    extra = f"  {o.flag}" if o.flag else ""
    err = next((tr["error"]["message"] for tr in o.tries if tr.get("error")), None)
    ref = o.reference_checksum()
    return (f"Q{o.index - 1:<3} {shown:<24} rows {ref[0] if ref else '-'}  {o.mode}{extra}"
            + (f"  error: {err[:100]}" if err else ""))


def run(target: Target, opts: RunOptions, writer: ResultsWriter, make: Connect, say: Say) -> RunVerdict:
    """Every try, then the concurrent test; Ctrl-C and a lost server go up to the
    writer's context with every finished try already in the file."""
    doc = writer.doc
    assert isinstance(doc, ClickBenchRunDocument)
    if opts.concurrent:
        require_server(target, "--concurrent")
    dropper = CacheDropper(target, opts.drop_os_cache) if opts.cold else None
    outcomes: list[QueryOutcome] = []
    queries = workload().queries

    def on_try(o: QueryOutcome, t: int) -> None:
        if not outcomes or outcomes[-1] is not o:
            outcomes.append(o)
        if t == opts.tries - 1:
            say(_progress_line(o))
        doc.queries = [x.to_json() for x in outcomes]
        doc.cold = dropper.describe() if dropper else None
        writer.checkpoint(force=True)

    run_queries(target, queries, opts.tries, opts.timeout, dropper, on_try, opts.only)
    doc.cold = dropper.describe() if dropper else None
    if opts.concurrent and opts.duration:
        say(f"concurrent: {opts.concurrent} connections for {opts.duration:g} s")
        phase = run_concurrent(make, queries, opts.concurrent, opts.duration, opts.seed, timeout=opts.timeout)
        doc.concurrent = phase.to_json()
        if phase.interrupted:
            raise KeyboardInterrupt
        say(f"concurrent: {phase.qps:.3f} QPS, error ratio {phase.error_ratio:.3f}")
    doc.clickbench = make_entry(target, doc, outcomes, opts)
    return _verdict(doc, outcomes, opts, say)


def _verdict(doc: ClickBenchRunDocument, outcomes: list[QueryOutcome], opts: RunOptions, say: Say) -> RunVerdict:
    verdict = RunVerdict()
    failed = [o.index for o in outcomes if any(v is None for v in o.seconds)]
    unstable = [o.index for o in outcomes if o.flag and o.mode != "order-sensitive"]
    if unstable:
        verdict.exit_code = EXIT_FINDING
        verdict.messages.append("results differ between tries: " + ", ".join(f"Q{i - 1}" for i in unstable))
    if opts.reference is not None:
        diffs = compare_with_reference(outcomes, opts.reference.to_json())
        doc.reference = {"file": opts.reference_path, "target": opts.reference.target, "differences": diffs}
        for d in diffs:
            verdict.messages.append(f"{'correctness regression' if d['counted'] else 'note'}: Q{d['index'] - 1} "
                                    f"{d['what']} ({d['mode']}): here {d['here']}, reference {d['reference']}")
        if any(d["counted"] for d in diffs):
            verdict.exit_code = EXIT_FINDING
        else:
            say(f"checksums match the reference ({opts.reference_path})"
                + (f"; {len(diffs)} order-sensitive differences listed" if diffs else ""))
    if failed:
        verdict.exit_code = EXIT_FINDING
        verdict.messages.append(f"{count(len(failed), 'query')} failed at least once: "
                                + ", ".join(f"Q{i - 1}" for i in failed))
    return verdict
