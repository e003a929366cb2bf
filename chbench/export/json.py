from __future__ import annotations

import json

from chbench.export.base import Exporter
from chbench.export.sections import Report


class JsonExporter(Exporter):
    """The document behind the report (a comparison, ClickBench scores, a results
    document), as JSON."""

    name = "json"

    def render(self, report: Report) -> str:
        return json.dumps(report.data, indent=2) + "\n"
