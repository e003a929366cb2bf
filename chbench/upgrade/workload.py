"""What ``chbench upgrade`` runs: the built-in suite, a query file, or ClickBench on a
synthetic ``hits`` table that each side builds itself from the same seeded SQL."""

from __future__ import annotations

from chbench.clickbench.loading import legacy_create_sql
from chbench.clickbench.synthetic import TABLE, insert_sql
from chbench.workload import PerfTestOptions, Workload, default_suite, load_workload, read_workload

SEED = 1  # the synthetic hits' seed: both sides must build the same rows
# every column of a hits row, hashed by the engine: equal on both sides when the data is
DATA_CHECK_SQL = f"SELECT count(), sum(cityHash64(*)) FROM {TABLE}"


def upgrade_workload(suite: str, queries: str | None, setup: str | None, rows: int, scale: float,
                     tests: list[str] | None = None, test_options: PerfTestOptions | None = None,
                     inline: list[str] | None = None) -> Workload:
    """The workload both sides run (``inline``: ``-q SQL`` queries); ``--setup FILE``
    statements run before the suite's own."""
    if queries or tests or inline:
        wl = load_workload([queries] if queries else [], inline or [], scale=scale, tests=tests,
                           test_options=test_options)
    elif suite == "clickbench":
        from chbench.clickbench import workload

        wl = workload()
        # create.sql's columns in ClickHouse's own type names: one statement every version
        # takes alike (create.sql itself uses CREATE OR REPLACE and settings of 25.x on)
        wl.setup = [f"DROP TABLE IF EXISTS {TABLE}", legacy_create_sql(), insert_sql(SEED, rows, 0, rows)]
        wl.source = f"ClickBench queries on a synthetic hits table of {rows:,} rows (seed {SEED}), built on each side"
    else:
        wl = default_suite(scale)
    if setup:
        extra = read_workload(setup, "script")
        wl.setup = [*extra.setup, *(q.sql for q in extra.queries), *wl.setup]
        wl.teardown = [*wl.teardown, *extra.teardown]
    return wl
