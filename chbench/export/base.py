"""The exporter interface and the registry of formats, as hyperfine's ``export/``:
every format renders the same typed report (``sections.py``)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from chbench.errors import UsageError
from chbench.export.sections import Report

# format name -> "module:Class" (imported when asked for: rich and matplotlib are slow)
EXPORTERS = {
    "console": "chbench.export.console:ConsoleExporter",
    "markdown": "chbench.export.markdown:MarkdownExporter",
    "json": "chbench.export.json:JsonExporter",
    "csv": "chbench.export.csv:CsvExporter",
    "html": "chbench.export.html:HtmlExporter",
}


class Exporter(ABC):
    name = ""

    @abstractmethod
    def render(self, report: Report) -> str:
        """The whole report as text in this format (ending with a newline)."""


def get_exporter(name: str) -> Exporter:
    import importlib

    if name not in EXPORTERS:
        raise UsageError(f"unknown format '{name}': use one of {', '.join(EXPORTERS)}")
    module, _, cls = EXPORTERS[name].partition(":")
    exporter: Exporter = getattr(importlib.import_module(module), cls)()
    return exporter
