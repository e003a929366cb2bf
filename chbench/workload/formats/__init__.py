"""Workload formats behind one small registry, chosen by one function.

A format turns text into a :class:`~chbench.workload.model.Workload`. ``auto`` asks
each format's ``detect`` in registry order and falls back to a SQL script. A new format
is a module in this folder plus one line in ``FORMATS``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from chbench.errors import UsageError
from chbench.files import read_user_text
from chbench.workload.formats.clickbench import looks_like_clickbench, parse_clickbench
from chbench.workload.formats.perftest import (
    PerfTestOptions,
    looks_like_perftest,
    parse_perftest,
    read_tests,
    select_tests,
)
from chbench.workload.formats.script import check_text, looks_like_lines, parse_lines, parse_script, parse_tsv
from chbench.workload.formats.suite import CALIBRATION_FALLBACK_SQL, CALIBRATION_SQL, default_suite
from chbench.workload.model import Query, Workload

__all__ = ["AUTO", "CALIBRATION_FALLBACK_SQL", "CALIBRATION_SQL", "FORMATS", "Format", "PerfTestOptions",
           "default_suite", "load_workload", "parse_workload", "read_workload"]


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    parse: Callable[[str, str], Workload]  # (text, source) -> workload
    detect: Callable[[str, str], bool] | None = None  # (path, text) -> auto picks this format


AUTO = "auto"
FALLBACK = "script"
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("perftest", "ClickHouse performance test XML (tests/performance/*.xml)", parse_perftest,
           detect=looks_like_perftest),
    Format("clickbench", "ClickBench's queries.sql: one query per line, named Q0, Q1, …", parse_clickbench,
           detect=lambda path, text: looks_like_clickbench(text)),
    Format("lines", "one query per line, as clickhouse-benchmark reads a file", parse_lines,
           detect=lambda path, text: looks_like_lines(text)),
    Format("script", "SQL script: ';'-separated statements, comments, '-- name:'", parse_script),
    Format("tsv", "one query per line, TSV escapes undone (clickhouse-benchmark's standard input)", parse_tsv),
)}


def parse_workload(text: str, source: str = "query file", fmt: str = AUTO) -> Workload:
    """``text`` in format ``fmt`` (``auto``: the first format that recognises it)."""
    if fmt == AUTO:
        check_text(text, source)
        fmt = next((f.name for f in FORMATS.values() if f.detect and f.detect(source, text)), FALLBACK)
    if fmt not in FORMATS:
        raise UsageError(f"unknown query format '{fmt}': use one of {', '.join([AUTO, *FORMATS])}")
    return FORMATS[fmt].parse(text, source)


def _read_text(path: str) -> tuple[str, str]:
    """(text, source) of a query file; ``-`` reads standard input."""
    if path == "-":
        return sys.stdin.read().removeprefix("\ufeff"), "standard input"
    return read_user_text(path, "query file"), path


def read_workload(path: str, fmt: str = AUTO) -> Workload:
    """Read a query file; ``-`` reads standard input."""
    text, source = _read_text(path)
    if not text.strip():
        raise UsageError(f"{source}: empty query file")
    return parse_workload(text, source, fmt)


def load_workload(files: list[str], queries: list[str], fmt: str = AUTO, scale: float = 1.0,
                  tests: list[str] | None = None, test_options: PerfTestOptions | None = None) -> Workload:
    """What a command runs: query files, ``--query`` texts and performance tests
    (``--tests``), in that order, as one workload (``-`` reads standard input); nothing
    given, the built-in suite at ``scale``. ``test_options`` select among tests."""
    if [*files, *queries].count("-") > 1:
        raise UsageError("only one of the query sources can read standard input ('-')")
    opts = test_options or PerfTestOptions()
    parts = [read_workload(f, fmt) for f in files]
    for i, sql in enumerate(queries):
        parts.append(read_workload("-", fmt) if sql == "-" else parse_workload(sql, f"--query #{i + 1}", "script"))
    if tests:
        parts.append(read_tests(tests, opts.filter))
    if not parts:
        if test_options is not None and test_options != PerfTestOptions():
            raise UsageError("--tests-filter, --long and --max-queries choose among performance tests: give "
                             "--tests or an XML --queries file")
        return default_suite(scale)
    wl = merge(parts)
    if wl.groups:
        names = [g.name for g in wl.groups]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"test {twice[0]!r} is given twice")
        wl = select_tests(wl, opts)
    return wl


def merge(parts: list[Workload]) -> Workload:
    if len(parts) == 1:
        return parts[0]
    out = Workload(queries=[], source=" + ".join(p.source for p in parts))
    for p in parts:
        out.queries += p.queries
        out.setup += p.setup
        out.teardown += p.teardown
        out.settings.update(p.settings)
        out.groups += p.groups
    return out


def parse_queries(text: str, source: str = "query file", fmt: str = AUTO) -> list[Query]:
    """The queries of ``text`` (a convenience for one-off texts and tests)."""
    return parse_workload(text, source, fmt).queries
