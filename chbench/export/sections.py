"""What exporters render: a report of typed sections, built by ``chbench.report`` from
results and comparisons. A section is a list of blocks — text, tables, charts — and
every exporter knows every block, so a new kind of results needs a section builder and
no exporter change.

A table cell keeps its exact value (HTML writes it in ``data-value``, CSV in its own
column) and the column says how to show it (``export/numbers.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chbench.export import numbers


@dataclass
class Column:
    title: str
    fmt: str = ""  # a format spec ('.2f', ',d') or a named format ('change', 'interval', 'percent')
    align: str = "right"  # left | right
    key: str | tuple[str, ...] = ""  # machine name(s) of the value(s), for CSV (default: the title)
    sep: str = " / "  # between the values of a cell that holds several
    also: tuple[str, ...] = ()  # CSV only: machine values the text does not show, written before ``keys``

    @property
    def keys(self) -> tuple[str, ...]:
        if isinstance(self.key, tuple):
            return self.key
        return (self.key or self.title,)


@dataclass
class Cell:
    value: Any  # the exact value: a number, a text, or a tuple for a column of several
    text: str | None = None  # shown instead of the formatted value
    style: str = ""  # a verdict or status word: exporters colour it
    also: tuple[Any, ...] = ()  # the values of the column's ``also`` keys

    def shown(self, column: Column) -> str:
        if self.text is not None:
            return self.text
        if isinstance(self.value, tuple) and column.fmt not in numbers.NAMED:
            return numbers.pair(self.value, column.fmt, column.sep)
        return numbers.text(self.value, column.fmt)

    def values(self) -> tuple[Any, ...]:
        return self.value if isinstance(self.value, tuple) else (self.value,)


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    title: str = ""
    row_keys: list[tuple[str, str]] = field(default_factory=list)  # per row: (attribute, value), e.g. query
    filterable: bool = True

    def add(self, *cells: Any, key: tuple[str, str] | None = None) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(c) for c in cells])
        if key is not None:
            self.row_keys.append(key)


@dataclass
class Text:
    text: str
    kind: str = "note"  # note | summary (a finding: a bullet in Markdown, large in HTML)
    attrs: dict[str, str] = field(default_factory=dict)  # HTML data attributes


@dataclass
class Chart:
    name: str  # unique in a report; HTML writes it as data-plot
    draw: Callable[[], str]  # the SVG, drawn only by exporters that show charts


@dataclass
class Charts:
    charts: list[Chart]


@dataclass
class Heading:
    text: str


@dataclass
class Details:
    """A foldable group (HTML): per-query charts, say."""

    summary: str
    blocks: list[Block]
    style: str = ""  # colours the summary's last word (a verdict)


Block = Text | Table | Charts | Heading | Details


@dataclass
class Section:
    title: str
    kind: str  # comparison | run | load | clickbench | transfer | …
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Report:
    title: str
    sections: list[Section]
    files: list[str] = field(default_factory=list)
    data: Any = None  # the document behind it, for the JSON exporter
