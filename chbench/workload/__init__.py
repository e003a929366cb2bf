"""Workloads: what is run — the built-in suite, query files, and query preparation."""

from chbench.workload.query import Query, prepare_sql, query_name
from chbench.workload.sqlfile import parse_queries, read_queries
from chbench.workload.suite import CALIBRATION_FALLBACK_SQL, CALIBRATION_SQL, default_suite

__all__ = [
    "CALIBRATION_FALLBACK_SQL",
    "CALIBRATION_SQL",
    "Query",
    "default_suite",
    "parse_queries",
    "prepare_sql",
    "query_name",
    "read_queries",
]
