"""Query files: SQL scripts (``;``-separated, comments, ``-- name: NAME``) and
clickhouse-benchmark's one-query-per-line files."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from chbench.errors import UsageError

if TYPE_CHECKING:
    from chbench.workload.query import Query

_NAME = re.compile(r"^\s*--\s*name:\s*(\S.*?)\s*$", re.IGNORECASE)
_WEIGHT_LINE = re.compile(r"^\s*--\s*weight:\s*(\S*)\s*$", re.IGNORECASE)
_WEIGHT_TAIL = re.compile(r"\s*--\s*weight:\s*(\S*)\s*$", re.IGNORECASE)
_TSV_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "0": "\0", "'": "'", "b": "\b", "f": "\f"}


def _tsv_unescape(line: str) -> str:
    return re.sub(r"\\(.)", lambda m: _TSV_ESCAPES.get(m.group(1), "\\" + m.group(1)), line)


def _weight(text: str, source: str) -> int:
    try:
        w = int(text)
    except ValueError:
        w = 0
    if w < 1:
        raise UsageError(f"{source}: bad weight '{text}' (use a positive whole number, e.g. '-- weight: 5')")
    return w
_STATEMENT_START = re.compile(
    r"^\s*(select|with|insert|create|drop|alter|show|explain|describe|desc|optimize|system|truncate|"
    r"set|kill|rename|exists|check|detach|attach|grant|revoke|use|\()\b",
    re.IGNORECASE,
)


def strip_comments_and_strings(sql: str, keep_strings: bool = True) -> str:
    """Same length as ``sql``, with comments (and, unless keep_strings, string
    contents) blanked out, so positions found in the result are valid in ``sql``."""
    return "".join(_scan(sql, keep_strings)[0])


def _scan(sql: str, keep_strings: bool) -> tuple[list[str], list[int]]:
    """Mask comments/strings; return the masked chars and the offsets of top-level ';'."""
    out: list[str] = []
    semis: list[int] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i) or c == "#" and (i == 0 or sql[i - 1] == "\n"):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.extend(" " * (j - i))
            i = j
        elif c == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise UsageError(f"unterminated /* comment starting at line {sql.count(chr(10), 0, i) + 1}")
            out.extend(ch if ch == "\n" else " " for ch in sql[i : j + 2])
            i = j + 2
        elif c in "'\"`":
            j = i + 1
            while True:
                if j >= n:
                    raise UsageError(
                        f"unterminated {c} quote starting at line {sql.count(chr(10), 0, i) + 1}"
                    )
                if sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote
                        j += 2
                        continue
                    break
                j += 1
            chunk = sql[i : j + 1]
            out.extend(chunk if keep_strings else c + " " * (len(chunk) - 2) + c)
            i = j + 1
        else:
            if c == ";":
                semis.append(i)
            out.append(c)
            i += 1
    return out, semis


def parse_queries(text: str, source: str = "query file", fmt: str = "auto") -> list[Query]:
    """Split a query file into named queries.

    fmt: ``script`` (``;``-separated), ``lines`` (one query per line, as
    clickhouse-benchmark reads), ``tsv`` (lines, with TSV escapes such as ``\n``
    undone), or ``auto`` (lines when there is no ``;`` and every non-empty line starts
    a statement, else script).

    Comment lines before a query may name it (``-- name: NAME``) and weight it in a
    load mix (``-- weight: N``); in line formats a trailing ``-- weight: N`` works too."""
    from chbench.workload.query import Query, query_name

    if "\x00" in text:
        raise UsageError(f"{source}: not a text file")
    try:
        _, semis = _scan(text, keep_strings=True)
    except UsageError as e:
        raise UsageError(f"{source}: {e}") from None
    if fmt == "auto":
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        fmt = "lines" if not semis and len(lines) > 1 and all(_STATEMENT_START.match(ln) for ln in lines) else "script"
    pieces: list[str] = []
    if fmt in ("lines", "tsv"):
        preamble: list[str] = []
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith(("--", "#")):
                preamble.append(line)
                continue
            body = _tsv_unescape(line) if fmt == "tsv" else line
            pieces.append("\n".join([*preamble, body]))
            preamble = []
    else:
        start = 0
        for pos in semis:
            pieces.append(text[start:pos])
            start = pos + 1
        pieces.append(text[start:])
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for piece in pieces:
        name = None
        weight = 1
        body_lines = []
        for line in piece.splitlines():
            if not body_lines:  # preamble: blank lines, comments, the -- name: line
                m = _NAME.match(line)
                if m:
                    name = m.group(1)
                    continue
                m = _WEIGHT_LINE.match(line)
                if m:
                    weight = _weight(m.group(1), source)
                    continue
                if not line.strip() or line.lstrip().startswith(("--", "#")):
                    continue
            body_lines.append(line)
        body = "\n".join(body_lines).strip()
        if not strip_comments_and_strings(body).strip():
            continue
        tail = _WEIGHT_TAIL.search(body)
        masked = strip_comments_and_strings(body, keep_strings=False)
        if tail and len(masked) == len(body) and not masked[tail.start() :].strip():  # a comment, not a string
            weight = _weight(tail.group(1), source)
            body = body[: tail.start()].rstrip()
        name = name or query_name(body)
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        queries.append(Query(name=name, sql=body, weight=weight))
    if not queries:
        raise UsageError(f"{source}: no query found")
    return queries


def read_queries(path: str, fmt: str = "auto") -> list[Query]:
    """Read a query file; ``-`` reads standard input."""
    if path == "-":
        text = sys.stdin.read()
        source = "standard input"
    else:
        p = Path(path)
        if not p.exists():
            raise UsageError(f"query file not found: {path}")
        if p.is_dir():
            raise UsageError(f"query file is a directory: {path}")
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise UsageError(f"cannot read query file {path}: {e.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"{path}: not a UTF-8 text file") from None
        source = path
    if not text.strip():
        raise UsageError(f"{source}: empty query file")
    return parse_queries(text, source, fmt)
