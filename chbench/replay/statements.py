"""What a captured statement is, read from its text: whether replaying it can change
anything (the parse check of a read-only replay, beside ``readonly=2`` on the
connection), its literals redacted on request, and a normalized hash where the server
gives none (ClickHouse 18.16 has no ``normalized_query_hash``)."""

from __future__ import annotations

import hashlib
import re

from chbench.errors import UsageError
from chbench.workload.sql import strip_comments_and_strings

# statements that only read: what a read-only replay sends
READ_KEYWORDS = frozenset({"select", "with", "show", "describe", "desc", "explain", "exists"})
# the reason a statement is not replayed read-only, by its first keyword
_CATEGORY = {
    "insert": "write", "delete": "write", "update": "write", "replace": "write",
    "alter": "ddl", "create": "ddl", "drop": "ddl", "rename": "ddl", "truncate": "ddl", "attach": "ddl",
    "detach": "ddl", "optimize": "ddl", "exchange": "ddl", "undrop": "ddl", "move": "ddl",
    "system": "system", "set": "set", "use": "use", "kill": "kill", "grant": "access", "revoke": "access",
    "check": "check", "begin": "transaction", "commit": "transaction", "rollback": "transaction",
}
# never replayed, even with --allow-writes: chbench sends the captured settings and
# database with every query, so these would only change a connection that lanes share
ALWAYS_SKIPPED = frozenset({"set", "use", "transaction"})
_FIRST_WORD = re.compile(r"[A-Za-z_]+")
_INTO_OUTFILE = re.compile(r"\bINTO\s+OUTFILE\b", re.IGNORECASE)


def _masked(sql: str, keep_identifiers: bool = False) -> str:
    try:
        return strip_comments_and_strings(sql, keep_strings=False, keep_identifiers=keep_identifiers)
    except UsageError:  # an unterminated quote or comment: the server refused it anyway
        return sql


def first_keyword(sql: str) -> str:
    """The statement's first keyword, lower case (``(SELECT …)`` is ``select``)."""
    m = _FIRST_WORD.search(_masked(sql).lstrip().lstrip("("))
    return m.group(0).lower() if m else ""


def classify(sql: str) -> str | None:
    """None for a statement that only reads; else why a read-only replay skips it, as
    ``category: KEYWORD`` (``write: INSERT``, ``ddl: ALTER``, ``system: SYSTEM``, …)."""
    word = first_keyword(sql)
    if word in READ_KEYWORDS:
        if _INTO_OUTFILE.search(_masked(sql)):
            return "write: INTO OUTFILE"
        return None
    category = _CATEGORY.get(word, "other")
    return f"{category}: {word.upper() or '(empty)'}"


def skip_reason(sql: str, allow_writes: bool) -> str | None:
    """Why this statement is not replayed (None: it is)."""
    reason = classify(sql)
    if reason is None:
        return None
    if not allow_writes or reason.split(":")[0] in ALWAYS_SKIPPED:
        return reason
    return None


# -- literals -----------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)(?![\w.])")


def redact_literals(sql: str) -> str:
    """String literals become ``'?'`` and number literals ``0``: the text still parses
    and runs, but says nothing about the values it was run with. Identifiers (in
    backticks or double quotes) and comments are kept as written."""
    out: list[str] = []
    i, n = 0, len(sql)
    plain_start = 0

    def flush(end: int) -> None:
        out.append(_NUMBER.sub("0", sql[plain_start:end]))

    while i < n:
        c = sql[i]
        if c == "'":
            flush(i)
            j = i + 1
            while j < n:
                if sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == "'":
                    if j + 1 < n and sql[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            out.append("'?'")
            i = plain_start = min(j + 1, n)
        elif c in '`"' or (c == "-" and sql.startswith("--", i)) or (c == "/" and sql.startswith("/*", i)):
            flush(i)
            end = {"`": "`", '"': '"', "-": "\n", "/": "*/"}[c]
            j = sql.find(end, i + (2 if c in "-/" else 1))
            j = n if j < 0 else j + len(end)
            out.append(sql[i:j])
            i = plain_start = j
        else:
            i += 1
    flush(n)
    return "".join(out)


def normalized_hash(sql: str) -> str:
    """A stable hash of the query with its literals taken out, for servers whose
    query_log has no ``normalized_query_hash`` (not ClickHouse's own function: the two
    never meet in one workload file, whose header says which one it holds)."""
    shape = " ".join(redact_literals(sql).split()).lower()
    shape = re.sub(r"\(\s*0(?:\s*,\s*0)+\s*\)", "(0)", shape).replace("'?'", "0")
    return str(int.from_bytes(hashlib.blake2b(shape.encode(), digest_size=8).digest(), "little"))


def short_name(sql: str, words: int = 6) -> str:
    """The first words of a statement, for tables and file names: string literals
    blanked, quoted names kept (a backquoted database name showed as two backquotes)."""
    text = " ".join(_masked(sql, keep_identifiers=True).split())
    return " ".join(text.split(" ")[:words])[:60]


# captured settings that describe how the original client talked to the server, not
# what the query asked for: never replayed (chbench sets its own wire format, database,
# query id and readonly) and left out of a suite
_CLIENT_SETTING = re.compile(r"^(log_queries|readonly|database|default_format|output_format|session_\w+|query_id|"
                             r"send_progress_in_http_headers|http_\w+|wait_end_of_query|add_http_cors_header|"
                             r"enable_http_compression|buffer_size|max_query_size_http)$")


def client_setting(name: str) -> bool:
    return bool(_CLIENT_SETTING.match(name))
