"""Opening any results file chbench reads: its kind is detected once, here.

Ours carry ``schema.name == "chbench.results"`` and a ``kind``; foreign ones are
recognised by shape: ClickBench's published results, the upgrade script's JSON,
clickhouse-benchmark's ``--json``. Anything else is one clear line."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from chbench.errors import UsageError
from chbench.files import read_user_file
from chbench.results.clickbench import ClickBenchEntry, ClickBenchRunDocument
from chbench.results.document import SCHEMA_NAME, SCHEMA_VERSION, Document
from chbench.results.foreign import ClickHouseBenchmarkFile, UpgradeScriptFile

ResultsFile = Document | ClickBenchEntry | UpgradeScriptFile | ClickHouseBenchmarkFile
T = TypeVar("T")


def read_json_object(path: str, what: str = "a results file") -> dict[str, Any]:
    """A JSON object from ``path``, or one clear UsageError naming ``what`` it should be."""
    raw = read_user_file(path, "results file")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{path}: not {what} (not JSON)") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not {what} (JSON, but not an object)")
    return doc


def open_results(path: str, what: str = "a results file") -> ResultsFile:
    """The typed contents of ``path``: one of our documents, or a foreign file."""
    found = _detect(read_json_object(path, what), path)
    if found is None:
        raise UsageError(f"{path}: not a results file chbench knows (ours, ClickBench's, clickhouse-benchmark's "
                         "--json or the upgrade script's)")
    return found


def _detect(doc: dict[str, Any], path: str) -> ResultsFile | None:
    schema = doc.get("schema")
    if isinstance(schema, dict) and schema.get("name") == SCHEMA_NAME:
        try:
            version = int(schema.get("version", 0))
        except (TypeError, ValueError):
            version = SCHEMA_VERSION + 1
        if version > SCHEMA_VERSION:
            raise UsageError(f"{path}: results schema version {schema.get('version')} is newer than this chbench "
                             f"reads ({SCHEMA_VERSION}); upgrade chbench")
        return Document.from_json(doc, path)
    if isinstance(doc.get("result"), list) and "system" in doc:
        return ClickBenchEntry.from_json(doc, path)
    if UpgradeScriptFile.matches(doc):
        return UpgradeScriptFile(meta=doc["meta"], results=doc["results"])
    if ClickHouseBenchmarkFile.matches(doc):
        return ClickHouseBenchmarkFile.from_json(doc)
    return None


def open_as(path: str, cls: type[T], what: str) -> T:
    """``path`` opened, and of the kind ``cls`` (else one line saying what it should be)."""
    doc = _detect(read_json_object(path, what), path)
    if not isinstance(doc, cls):
        raise UsageError(f"{path}: not {what}")
    return doc


def open_clickbench_entry(path: str) -> ClickBenchEntry:
    """A ClickBench results file, or the entry of one of our finished ``clickbench run``
    files; anything else is one line saying what is wrong with it as a ClickBench file."""
    raw = read_json_object(path, "a ClickBench results file")
    if raw.get("kind") == "clickbench" and isinstance(raw.get("schema"), dict):
        doc = _detect(raw, path)
        if isinstance(doc, ClickBenchRunDocument):
            return entry_of(path, doc)
    return ClickBenchEntry.from_json(raw, path)


def entry_of(path: str, doc: ResultsFile) -> ClickBenchEntry:
    """The ClickBench entry of a published file, or of one of our finished runs."""
    if isinstance(doc, ClickBenchRunDocument):
        if doc.clickbench is None:
            raise UsageError(f"{path}: this chbench clickbench run did not finish (status {doc.status!r})")
        doc.clickbench.path = path
        return doc.clickbench
    if isinstance(doc, ClickBenchEntry):
        return doc
    raise UsageError(f"{path}: not a ClickBench results file (no 'result' list of 43 x 3 times)")
