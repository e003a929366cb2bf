"""SQL text formats: a script of ``;``-separated statements (``\\G`` ends one too, as in
clickhouse-client), and clickhouse-benchmark's one query per line (plain, or TSV-escaped
as it reads standard input).

Comment lines before a statement may say what it is:

* ``-- name: NAME`` names the query (else a stable short form of its SQL);
* ``-- weight: N`` weights it in a load mix (in line formats a trailing
  ``-- weight: N`` works too);
* ``-- settings: name=value, name=value`` gives this query its own settings;
* ``-- setup`` / ``-- teardown`` make the statement a set-up or tear-down statement
  (run once per side before / after the measured queries, not timed, writes allowed).

``SET name = value, …`` between statements sets those settings for every statement after
it, as clickhouse-client runs a script (a query's own ``-- settings:`` come over them); it
is not measured itself. It was, as a 0.1 ms "query", and on the embedded engine it set
the session behind the runner's back for whatever ran after it: from the second round on
every query of the file (measured: a query before it took 99 ms instead of 54 ms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chbench.errors import UsageError
from chbench.workload.model import Query, Workload, query_name
from chbench.workload.sql import STATEMENT_START, scan, strip_comments_and_strings

_NAME = re.compile(r"^\s*--\s*name:\s*(\S.*?)\s*$", re.IGNORECASE)
_WEIGHT_LINE = re.compile(r"^\s*--\s*weight:\s*(\S*)\s*$", re.IGNORECASE)
_WEIGHT_TAIL = re.compile(r"\s*--\s*weight:\s*(\S*)\s*$", re.IGNORECASE)
_SETTINGS = re.compile(r"^\s*--\s*settings:\s*(.*?)\s*$", re.IGNORECASE)
_ROLE = re.compile(r"^\s*--\s*(setup|teardown)\s*:?\s*$", re.IGNORECASE)
_TSV_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "0": "\0", "'": "'", "b": "\b", "f": "\f"}
_SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SET = re.compile(r"^\s*SET\s+(.*?);?\s*$", re.IGNORECASE | re.DOTALL)


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


def _settings(text: str, source: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        if not eq or not _SETTING_NAME.match(name.strip()):
            raise UsageError(f"{source}: bad '-- settings:' entry '{part}' (use name=value, name=value)")
        out[name.strip()] = value.strip().strip("'\"")
    return out


def check_text(text: str, source: str) -> list[int]:
    """The text is SQL we can read: no NUL bytes, strings and comments closed. Returns
    the offsets of top-level ``;``."""
    if "\x00" in text:
        raise UsageError(f"{source}: not a text file")
    try:
        return scan(text, keep_strings=True)[1]
    except UsageError as e:
        raise UsageError(f"{source}: {e}") from None


def looks_like_lines(text: str) -> bool:
    """One query per line: no ``;`` (or ``\\G``) anywhere and every line starts a statement."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    return not check_text(text, "text") and not _vertical_ends(text) and len(lines) > 1 and \
        all(STATEMENT_START.match(ln) for ln in lines)


def _vertical_ends(text: str) -> list[int]:
    """Offsets of ``\\G`` that end a statement, as clickhouse-client reads it (``;`` with
    vertical output): outside strings and comments, then a space, ``;`` or the end. A script
    pasted from clickhouse-client sent ``SELECT 3\\G SELECT 4`` as one query, a syntax error."""
    masked = strip_comments_and_strings(text, keep_strings=False)
    return [m.start() for m in re.finditer(r"\\G(?=\s|;|$)", masked)]


def script_pieces(text: str, source: str) -> list[str]:
    ends = sorted([(pos, 1) for pos in check_text(text, source)] + [(pos, 2) for pos in _vertical_ends(text)])
    pieces, start = [], 0
    for pos, width in ends:
        pieces.append(text[start:pos])  # "\\G;" leaves an empty piece between them, dropped as ";;" is
        start = pos + width
    return [*pieces, text[start:]]


def line_pieces(text: str, source: str, tsv: bool = False) -> list[str]:
    check_text(text, source)
    pieces: list[str] = []
    preamble: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("--", "#")):
            preamble.append(line)
            continue
        pieces.append("\n".join([*preamble, _tsv_unescape(line) if tsv else line]))
        preamble = []
    return pieces


@dataclass
class _Statement:
    body: str
    name: str | None = None
    weight: int = 1
    settings: dict[str, str] = field(default_factory=dict)
    role: str = "query"  # query | setup | teardown


def _statement(piece: str, source: str) -> _Statement | None:
    """One piece of text: its preamble (comments that say what it is) and its SQL."""
    st = _Statement("")
    body_lines: list[str] = []
    for line in piece.splitlines():
        if not body_lines:  # preamble: blank lines and comments
            if m := _NAME.match(line):
                st.name = m.group(1)
            elif m := _WEIGHT_LINE.match(line):
                st.weight = _weight(m.group(1), source)
            elif m := _SETTINGS.match(line):
                st.settings.update(_settings(m.group(1), source))
            elif m := _ROLE.match(line):
                st.role = m.group(1).lower()
            elif line.strip() and not line.lstrip().startswith(("--", "#")):
                body_lines.append(line)
            continue
        body_lines.append(line)
    body = "\n".join(body_lines).strip()
    if not strip_comments_and_strings(body).strip():
        return None
    tail = _WEIGHT_TAIL.search(body)
    masked = strip_comments_and_strings(body, keep_strings=False)
    if tail and len(masked) == len(body) and not masked[tail.start():].strip():  # a comment, not a string
        st.weight = _weight(tail.group(1), source)
        body = body[: tail.start()].rstrip()
    st.body = body
    return st


def _set_statement(body: str) -> dict[str, str] | None:
    """The settings of ``SET a = 1, b = 'x'``; None for any other statement (``SET ROLE``
    and the like are not settings)."""
    m = _SET.match(body)
    if not m:
        return None
    out: dict[str, str] = {}
    for part in re.split(r",(?=(?:[^']*'[^']*')*[^']*$)", m.group(1)):  # commas outside quotes
        name, eq, value = part.partition("=")
        if not eq or not _SETTING_NAME.match(name.strip()):
            return None
        out[name.strip()] = value.strip().strip("'\"")
    return out


def workload_of(pieces: list[str], source: str) -> Workload:
    """Named queries (duplicate names get ``#2``, ``#3``…), set-up and tear-down; a
    ``SET`` gives the statements after it its settings."""
    wl = Workload(queries=[], source=source)
    seen: dict[str, int] = {}
    carried: dict[str, str] = {}
    for piece in pieces:
        st = _statement(piece, source)
        if st is None:
            continue
        if st.role == "query" and (assigned := _set_statement(st.body)) is not None:
            carried.update(assigned)
            continue
        if st.role != "query":
            (wl.setup if st.role == "setup" else wl.teardown).append(st.body)
            continue
        name = st.name or query_name(st.body)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        wl.queries.append(Query(name=name, sql=st.body, weight=st.weight, settings={**carried, **st.settings}))
    if not wl.queries:
        raise UsageError(f"{source}: no query found")
    return wl


def parse_script(text: str, source: str) -> Workload:
    return workload_of(script_pieces(text, source), source)


def parse_lines(text: str, source: str) -> Workload:
    return workload_of(line_pieces(text, source), source)


def parse_tsv(text: str, source: str) -> Workload:
    return workload_of(line_pieces(text, source, tsv=True), source)
