"""Results files: every document chbench writes, typed (one module per kind), written
atomically by one writer, and opened — ours and foreign ones — by one function."""

from chbench.results.bisect import BisectDocument
from chbench.results.clickbench import (
    ClickBenchEntry,
    ClickBenchLoadDocument,
    ClickBenchRunDocument,
    CrashTestDocument,
    StressDocument,
)
from chbench.results.document import SCHEMA_NAME, SCHEMA_VERSION, Document, Meta
from chbench.results.foreign import ClickHouseBenchmarkFile, UpgradeScriptFile
from chbench.results.load import LoadDocument, LoadHost, LoadLevel
from chbench.results.open import (
    ResultsFile,
    entry_of,
    open_as,
    open_clickbench_entry,
    open_results,
    read_json_object,
)
from chbench.results.replay import ReplayDocument
from chbench.results.run import Calibration, RunDocument, RunQuery, RunSample, RunTarget
from chbench.results.store import write_atomic
from chbench.results.transfer import IngestDocument, ReadDocument, TransferDocument
from chbench.results.writer import ResultsWriter, check_output_path

__all__ = [
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "BisectDocument",
    "Calibration",
    "ClickBenchEntry",
    "ClickBenchLoadDocument",
    "ClickBenchRunDocument",
    "ClickHouseBenchmarkFile",
    "CrashTestDocument",
    "Document",
    "IngestDocument",
    "LoadDocument",
    "LoadHost",
    "LoadLevel",
    "Meta",
    "ReadDocument",
    "ReplayDocument",
    "ResultsFile",
    "ResultsWriter",
    "RunDocument",
    "RunQuery",
    "RunSample",
    "RunTarget",
    "StressDocument",
    "TransferDocument",
    "UpgradeScriptFile",
    "check_output_path",
    "entry_of",
    "open_clickbench_entry",
    "open_as",
    "open_results",
    "read_json_object",
    "write_atomic",
]
