"""ClickBench's query list (its ``queries.sql``): one query per line, verbatim, named by
position as ClickBench numbers them (Q0 … Q42)."""

from __future__ import annotations

from chbench.errors import UsageError
from chbench.workload.model import Query, Workload


def parse_clickbench(text: str, source: str) -> Workload:
    if "\x00" in text:
        raise UsageError(f"{source}: not a text file")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"{source}: no query found")
    return Workload(queries=[Query(name=f"Q{i}", sql=line) for i, line in enumerate(lines)], source=source)
