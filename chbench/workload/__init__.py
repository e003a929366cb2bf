"""Workloads: what is run — queries with their set-up and tear-down (``model``), the
formats they are read from (``formats/``, one registry), and load mixes (``mix``)."""

from chbench.workload.formats import (
    AUTO,
    CALIBRATION_FALLBACK_SQL,
    CALIBRATION_SQL,
    FORMATS,
    PerfTestOptions,
    default_suite,
    load_workload,
    parse_queries,
    parse_workload,
    read_workload,
)
from chbench.workload.model import Group, Query, Statement, Workload, prepare_sql, query_name

__all__ = [
    "AUTO",
    "CALIBRATION_FALLBACK_SQL",
    "CALIBRATION_SQL",
    "FORMATS",
    "Group",
    "Query",
    "Statement",
    "PerfTestOptions",
    "Workload",
    "default_suite",
    "load_workload",
    "parse_queries",
    "parse_workload",
    "prepare_sql",
    "query_name",
    "read_workload",
]
