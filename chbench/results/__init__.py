"""Results files: writing ours (versioned, atomic) and reading ours and foreign ones."""

from chbench.results.load import Loaded, load_results
from chbench.results.store import SCHEMA_NAME, SCHEMA_VERSION, write_atomic

__all__ = ["Loaded", "SCHEMA_NAME", "SCHEMA_VERSION", "load_results", "write_atomic"]
