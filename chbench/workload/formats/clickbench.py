"""ClickBench's query list (its ``queries.sql``): one query per line, verbatim, named by
position as ClickBench numbers them (Q0 … Q42)."""

from __future__ import annotations

import re

from chbench.errors import UsageError
from chbench.workload.model import Query, Workload

_HITS = re.compile(r"\bFROM\s+hits\b", re.I)


def looks_like_clickbench(text: str) -> bool:
    """ClickBench's file, or a part of it: one statement a line, each ending in ``;`` and
    reading the ``hits`` table. (Read as lines, its queries were named by their words —
    ``select-searchengineid-clientip-count-as-c-f3bac8`` — where ClickBench says Q31.)"""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.endswith(";") and _HITS.search(line) for line in lines)


def parse_clickbench(text: str, source: str) -> Workload:
    if "\x00" in text:
        raise UsageError(f"{source}: not a text file")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"{source}: no query found")
    return Workload(queries=[Query(name=f"Q{i}", sql=line) for i, line in enumerate(lines)], source=source)
