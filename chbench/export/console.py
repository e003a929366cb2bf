from __future__ import annotations

import io
import sys

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text as RichText

from chbench.export.base import Exporter
from chbench.export.sections import Block, Details, Heading, Report, Table, Text

STYLE = {"slower": "bold red", "faster": "bold green", "unstable": "yellow", "failed": "magenta",
         "answer changed": "bold red", "fails on B only": "bold magenta",
         "wrong data": "bold red", "WRONG ROW COUNT": "bold red"}


class ConsoleExporter(Exporter):
    """Tables on a terminal (rich): coloured verdicts when stdout is a terminal, plain
    text 140 columns wide otherwise. Charts are for HTML."""

    name = "console"

    def __init__(self, color: bool | None = None, width: int | None = None) -> None:
        self.color = color
        self.width = width

    def _console(self, buf: io.StringIO) -> Console:
        tty = sys.stdout.isatty() if self.color is None else self.color
        return Console(file=buf, force_terminal=tty, no_color=not tty, width=self.width or (None if tty else 140),
                       highlight=False)

    def render(self, report: Report) -> str:
        buf = io.StringIO()
        con = self._console(buf)
        for i, section in enumerate(report.sections):
            if i:
                con.print()
            con.print(RichText(section.title, style="bold"))
            for block in section.blocks:
                self._block(con, block)
        return buf.getvalue()

    def _block(self, con: Console, block: Block) -> None:
        if isinstance(block, Text):
            con.print(RichText(block.text))
        elif isinstance(block, Heading):
            con.print(RichText(block.text, style="bold"))
        elif isinstance(block, Table):
            if block.title:  # a line of its own: as the table's title, rich wrapped it to the table's width
                con.print(RichText(block.title))
            con.print(self._table(block))
        elif isinstance(block, Details):
            pass  # per-query charts: HTML only

    @staticmethod
    def _table(t: Table) -> RichTable:
        rt = RichTable()
        for i, c in enumerate(t.columns):
            # titles as plain text, like the cells: a '[...]' in one is not rich markup. The
            # first column names the row: folded onto a second line where the table is too
            # wide, never cut with '…' (seen: a perf test's queries all 'array_join.quer…')
            rt.add_column(RichText(c.title), justify="left" if c.align == "left" else "right",
                          overflow="fold" if i == 0 else "ellipsis")
        for cells in t.rows:
            rt.add_row(*(RichText(cell.shown(col), style=STYLE.get(cell.style, ""))
                         for cell, col in zip(cells, t.columns, strict=True)))
        return rt
