"""Output formats behind one interface, like hyperfine's ``export/`` modules.

Reports are typed sections (``sections.py``) built by ``chbench.report``; each exporter
renders any report: console (rich), Markdown and HTML (one table layout, ``markup.py``),
JSON (the document behind the report) and CSV (its tables). ``numbers.py`` formats
every number; ``benchmark.py`` writes clickhouse-benchmark's own text report."""

from chbench.export.base import EXPORTERS, Exporter, get_exporter

__all__ = ["EXPORTERS", "Exporter", "get_exporter"]
