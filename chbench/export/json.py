from __future__ import annotations

import json
import math
from typing import Any

from chbench.export.base import Exporter
from chbench.export.sections import Report


class JsonExporter(Exporter):
    """The document behind the report (a comparison, ClickBench scores, a results
    document), as strict JSON: a number no data could bound (an interval's open end) is
    null, as JSON has no infinity."""

    name = "json"

    def render(self, report: Report) -> str:
        return json.dumps(_strict(report.data), indent=2, allow_nan=False) + "\n"


def _strict(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict(x) for x in v]
    return v
