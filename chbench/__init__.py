"""chbench — honest ClickHouse benchmarks."""

__version__ = "0.1.0"
