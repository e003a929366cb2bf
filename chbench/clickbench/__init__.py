"""ClickBench: the standard 43-query analytics benchmark.

``data/`` holds ClickBench's ``create.sql`` and ``queries.sql`` verbatim, with the
attribution (``data/README.md``, CC BY-NC-SA 4.0) that must stay next to them.
``results`` reads and scores ClickBench results files."""

from __future__ import annotations

from importlib import resources


def data_text(name: str) -> str:
    return resources.files("chbench.clickbench").joinpath("data", name).read_text(encoding="utf-8")


def queries() -> list[str]:
    """The 43 queries, verbatim, in order."""
    return [line for line in data_text("queries.sql").splitlines() if line.strip()]


def create_table_sql() -> str:
    return data_text("create.sql")
