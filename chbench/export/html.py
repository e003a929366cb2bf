"""A self-contained HTML report: one file, charts as inline SVG (matplotlib, drawn by
``chbench/report/plots.py``), a few lines of inline script for sorting and filtering
tables, nothing fetched when viewed.

Every number shown carries its exact value in ``data-value``; the text is that value
rounded for reading. Tables with class ``sortable`` sort on a header click (by
``data-sort``, else ``data-value``) and filter with the box above them.
"""

from __future__ import annotations

import html
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from importlib import resources

from chbench import __version__
from chbench.export import numbers
from chbench.export.markup import Markup
from chbench.export.numbers import missing
from chbench.export.sections import Block, Cell, Chart, Charts, Column, Details, Report, Section, Table, Text
from chbench.results.environment import now_iso


def _asset(name: str) -> str:
    return resources.files("chbench.export").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def esc(v: object) -> str:
    return html.escape(str(v), quote=True)


def _style_class(style: str) -> str:
    return f"v-{style.replace(' ', '-')}" if style else ""


# Charts are drawn on every core from this many on. One chart costs 0.1-0.2 s (most of it
# matplotlib's axes and tick labels, whatever the data): the 61 of a report of two 10-query
# runs took 6.2 s here, 3.7 s on both cores (median of 5 side by side, 0.56-0.77 of the
# time per round; bench/report_time.py). Fewer are drawn in this process: the workers cost
# ~1 s to start (matplotlib imported once more).
PARALLEL_FROM = 16


class HtmlExporter(Markup):
    name = "html"

    def __init__(self) -> None:
        self._tables = 0
        self._svg: dict[int, str] = {}  # drawn ahead, by id of the chart

    def render(self, report: Report) -> str:
        self._svg = draw_all([c for s in report.sections for c in _charts(s.blocks)])
        try:
            return super().render(report)
        finally:
            self._svg = {}

    def document_start(self, report: Report) -> str:
        nav = "".join(f'<a href="#s{i}">{esc(s.title)}</a>' for i, s in enumerate(report.sections))
        files = ", ".join(f"<code>{esc(f)}</code>" for f in report.files)
        title = report.title or (report.sections[0].title if report.sections else "chbench")
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{esc(title)}</title><style>{_asset('report.css')}</style></head><body>"
                f"<header><h1>{esc(title)}</h1><p class=\"meta\">chbench {esc(__version__)}, {esc(now_iso())}"
                + (f" — from {files}" if files else "") + f"</p><nav>{nav}</nav></header>")

    def document_end(self, report: Report) -> str:
        return f"<script>{_asset('report.js')}</script></body></html>\n"

    def section(self, section: Section, index: int, body: str) -> str:
        return (f'<section id="s{index}" data-section="{esc(section.kind)}"><h2>{esc(section.title)}</h2>'
                f"{body}</section>")

    def heading(self, text: str) -> str:
        return f"<h3>{esc(text)}</h3>"

    def text(self, t: Text) -> str:
        attrs = "".join(f' {esc(k)}="{esc(v)}"' for k, v in t.attrs.items())
        return f'<p class="{"big" if t.kind == "summary" else "note"}"{attrs}>{esc(t.text)}</p>'

    def table_start(self, t: Table) -> str:
        self._tables += 1
        tid = f"t{self._tables}"
        box = (f'<input class="filter" data-table="{tid}" placeholder="filter rows…" aria-label="filter">'
               if t.filterable else "")
        title = f'<p class="note">{esc(t.title)}</p>' if t.title else ""
        return f'{title}{box}<table id="{tid}" class="sortable">'

    def table_end(self, t: Table) -> str:
        return "</tbody></table>"

    def row(self, cells: list[Cell], columns: list[Column], header: bool = False,
            key: tuple[str, str] | None = None) -> str:
        if header:
            heads = "".join(f'<th class="l">{esc(c.title)}</th>' if c.align == "left" else f"<th>{esc(c.title)}</th>"
                            for c in columns)
            return f"<thead><tr>{heads}</tr></thead><tbody>"
        tr = f'<tr {esc(key[0])}="{esc(key[1])}">' if key else "<tr>"
        return tr + "".join(self._cell(c, col) for c, col in zip(cells, columns, strict=True)) + "</tr>"

    def divider(self, columns: list[Column]) -> str:
        return ""

    def _cell(self, cell: Cell, column: Column) -> str:
        classes = " ".join(x for x in ("l" if column.align == "left" else "", _style_class(cell.style)) if x)
        cls = f' class="{classes}"' if classes else ""
        if not column.fmt:  # a text column
            return f"<td{cls}>{esc(cell.shown(column))}</td>"
        if column.fmt == "code":  # preformatted: a query plan
            return f'<td class="l code"><pre>{esc(cell.shown(column))}</pre></td>'
        values = cell.values()
        if len(values) == 1:
            return f'<td{cls} data-value="{_value(values[0])}">{esc(cell.shown(column))}</td>'
        # several values in one cell (an interval, runs A / B): each keeps its exact value
        interval = column.fmt == "interval"
        spans = [f'<span data-value="{_value(v)}">{esc(numbers.part(v, column.fmt))}</span>' for v in values]
        joined = (", " if interval else column.sep).join(spans)
        if interval and not any(missing(v) for v in values):
            joined = f"[{joined}]"
        return f'<td{cls} data-sort="{_value(values[0])}">{joined}</td>'

    def charts(self, c: Charts) -> str:
        return '<div class="charts">' + "".join(self._svg.get(id(ch)) or ch.draw() for ch in c.charts) + "</div>"

    def details(self, d: Details) -> str:
        summary = esc(d.summary)
        if d.style:
            head, _, word = d.summary.rpartition(" — ")
            summary = f'{esc(head)} — <span class="{_style_class(d.style)}">{esc(word)}</span>'
        return f"<details open><summary>{summary}</summary>{''.join(self.block(b) for b in d.blocks)}</details>"


def _charts(blocks: list[Block]) -> Iterator[Chart]:
    for b in blocks:
        if isinstance(b, Charts):
            yield from b.charts
        elif isinstance(b, Details):
            yield from _charts(b.blocks)


def draw_all(charts: list[Chart]) -> dict[int, str]:
    """The SVG of each chart (by its id), drawn by a process per core; nothing when
    there are too few charts or cores to gain (each is then drawn where it is shown).
    The workers fork from a server that imported matplotlib once (not from this process,
    which may hold threads: a forked lock stays locked)."""
    cores = _cores()
    if len(charts) < PARALLEL_FROM or cores < 2:
        return {}
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["chbench.report.plots"])
    try:
        with ProcessPoolExecutor(min(cores, len(charts) // 8), mp_context=ctx, initializer=_ignore_ctrl_c) as pool:
            svgs = pool.map(_call, [c.draw for c in charts], chunksize=4)
            return {id(c): svg for c, svg in zip(charts, svgs, strict=True)}
    except (OSError, BrokenProcessPool):  # no processes here (no /dev/shm for their locks, a limit): one by one
        return {}


def _cores() -> int:
    """The cores this process may run on (its affinity, where the system says)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _call(draw: Callable[[], str]) -> str:
    return draw()


def _ignore_ctrl_c() -> None:  # a worker: Ctrl-C is the command's to handle (one line, no traceback per worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _value(v: object) -> str:
    return "" if missing(v) else esc(repr(v) if isinstance(v, float) else v)
