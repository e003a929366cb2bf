from __future__ import annotations

import re

from chbench.export.markup import Markup
from chbench.export.sections import Cell, Column, Report, Section, Table, Text

ICON = {"slower": "🔴 slower", "faster": "🟢 faster", "unstable": "🟡 unstable"}


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


class MarkdownExporter(Markup):
    """GitHub-flavoured Markdown: for a CI comment or a file next to the results."""

    name = "markdown"

    def document_start(self, report: Report) -> str:
        return f"# {report.title}\n\n" if report.title else ""

    def document_end(self, report: Report) -> str:
        return ""

    def render(self, report: Report) -> str:
        return super().render(report).rstrip() + "\n"

    def section(self, section: Section, index: int, body: str) -> str:
        body = re.sub(r"(^- .*\n)(?=[^-\n])", r"\1\n", body, flags=re.M)  # a list ends before what follows
        return f"## {section.title}\n\n{body.rstrip()}\n\n"

    def heading(self, text: str) -> str:
        return f"### {text}\n\n"

    def text(self, t: Text) -> str:
        return f"- {t.text}\n" if t.kind == "summary" else f"{t.text}\n\n"

    def table_start(self, t: Table) -> str:
        return f"**{t.title}**\n\n" if t.title else ""

    def table_end(self, t: Table) -> str:
        return "\n"

    def row(self, cells: list[Cell], columns: list[Column], header: bool = False,
            key: tuple[str, str] | None = None) -> str:
        shown = [c.shown(col) if not header else col.title for c, col in zip(cells, columns, strict=True)]
        shown = [ICON.get(c.style, s) if c.style and not header else s for c, s in zip(cells, shown, strict=True)]
        return "| " + " | ".join(_escape(s) for s in shown) + " |\n"

    def divider(self, columns: list[Column]) -> str:
        return "|" + "|".join("---" if c.align == "left" else "---:" for c in columns) + "|\n"
