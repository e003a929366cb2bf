"""ClickBench: the standard 43-query analytics benchmark.

``data/`` holds ClickBench's ``create.sql`` and ``queries.sql`` verbatim, with the
attribution (``data/README.md``, CC BY-NC-SA 4.0) that must stay next to them. The
queries are a workload in ClickBench's own format (``workload.formats.clickbench``);
``scores`` scores ClickBench results files."""

from __future__ import annotations

from importlib import resources

from chbench.workload import Workload, parse_workload


def data_text(name: str) -> str:
    return resources.files("chbench.clickbench").joinpath("data").joinpath(name).read_text(encoding="utf-8")


def workload() -> Workload:
    """The 43 queries, verbatim, in order, named Q0 … Q42."""
    wl = parse_workload(data_text("queries.sql"), "ClickBench queries.sql", "clickbench")
    wl.source = "ClickBench (queries.sql, verbatim)"
    return wl


def queries() -> list[str]:
    """The 43 queries' SQL, verbatim, in order."""
    return [q.sql for q in workload().queries]


def create_table_sql() -> str:
    return data_text("create.sql")
