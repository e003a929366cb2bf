from __future__ import annotations

import json
from typing import Any

from chbench.export.base import Exporter


class JsonExporter(Exporter):
    name = "json"

    def comparison(self, doc: dict[str, Any]) -> str:
        return json.dumps(doc, indent=2)

    def clickbench(self, doc: dict[str, Any]) -> str:
        return json.dumps(doc, indent=2) + "\n"

    def transfer(self, doc: dict[str, Any]) -> str:
        return json.dumps(doc, indent=2) + "\n"
