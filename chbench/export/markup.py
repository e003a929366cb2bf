"""The one layout of a report in a markup language, as hyperfine's ``MarkupExporter``:
sections in order, their blocks in order, a table as a header row, a divider and one
row per table row. A format (Markdown, HTML) only supplies the pieces."""

from __future__ import annotations

from abc import abstractmethod

from chbench.export.base import Exporter
from chbench.export.sections import Block, Cell, Charts, Column, Details, Heading, Report, Section, Table, Text


class Markup(Exporter):
    def render(self, report: Report) -> str:
        parts = [self.document_start(report)]
        for i, section in enumerate(report.sections):
            parts.append(self.section(section, i, "".join(self.block(b) for b in section.blocks)))
        parts.append(self.document_end(report))
        return "".join(parts)

    def block(self, b: Block) -> str:
        if isinstance(b, Table):
            return self.table(b)
        if isinstance(b, Text):
            return self.text(b)
        if isinstance(b, Heading):
            return self.heading(b.text)
        if isinstance(b, Charts):
            return self.charts(b)
        return self.details(b)

    def table(self, t: Table) -> str:
        rows = [self.row([Cell(c.title) for c in t.columns], t.columns, header=True), self.divider(t.columns)]
        for i, cells in enumerate(t.rows):
            rows.append(self.row(cells, t.columns, key=t.row_keys[i] if i < len(t.row_keys) else None))
        return self.table_start(t) + "".join(rows) + self.table_end(t)

    # -- what a format supplies ------------------------------------------------------------
    @abstractmethod
    def document_start(self, report: Report) -> str: ...

    @abstractmethod
    def document_end(self, report: Report) -> str: ...

    @abstractmethod
    def section(self, section: Section, index: int, body: str) -> str: ...

    @abstractmethod
    def text(self, t: Text) -> str: ...

    @abstractmethod
    def heading(self, text: str) -> str: ...

    @abstractmethod
    def row(self, cells: list[Cell], columns: list[Column], header: bool = False,
            key: tuple[str, str] | None = None) -> str: ...

    @abstractmethod
    def divider(self, columns: list[Column]) -> str: ...

    def table_start(self, t: Table) -> str:
        return ""

    def table_end(self, t: Table) -> str:
        return ""

    def charts(self, c: Charts) -> str:
        """Charts are drawn by formats that can show them."""
        return ""

    def details(self, d: Details) -> str:
        """Folded groups (per-query charts) belong to formats that can fold."""
        return ""
