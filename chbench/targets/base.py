"""The one small interface every target implements, what a target can do, and the
sample it returns.

A target is where queries go: the embedded chDB engine, the HTTP interface or the
native protocol. Callers only ever see :class:`Target`; like httpx's transports, each
implementation hides its protocol behind ``execute``, maps its library's exceptions to
chbench's in one place, and says what it can do in :class:`Capabilities` (as
clickhouse-connect's backends do) instead of callers testing which kind it is.
"""

from __future__ import annotations

import contextlib
import difflib
import ipaddress
import math
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from chbench.errors import ChbenchError, ConnectError, QueryError, ServerLost, UsageError
from chbench.targets.result import Result
from chbench.targets.url import Protocol, TargetURL

# chbench's own bookkeeping on a server (its version, settings, query_log reads, KILL)
# runs under query ids with this prefix, so a capture of that server's log leaves it out
ADMIN_QUERY_PREFIX = "chbench-admin-"


def admin_query_id() -> str:
    return ADMIN_QUERY_PREFIX + uuid.uuid4().hex


@dataclass(frozen=True)
class Capabilities:
    """What a target can do: one field each, rather than callers testing its kind."""

    in_process: bool = False  # the engine runs inside this process (shares its CPU and memory)
    concurrent_sessions: bool = True  # several connections can run queries at the same time
    streaming_insert: bool = False  # insert_stream(): an INSERT's data streamed for the server to parse
    local_files: bool = False  # the engine reads this host's files by path (INSERT … FROM file())
    formatted_results: bool = False  # query_bytes(): a result as the bytes of its FORMAT clause
    stages: bool = False  # processing stages other than complete (--stage)
    kill_query: bool = True  # KILL QUERY reaches a query still running
    query_log: bool = True  # system.query_log can exist (the probe tells whether it does)
    # system.asynchronous_metrics describes a host of the server's own (in-process and
    # worker engines run on the client host: its probes are theirs)
    server_host: bool = True
    # its system logs outlive new_session() (a chDB worker's go with its process)
    logs_outlive_session: bool = True

    def to_json(self) -> dict[str, bool]:
        return asdict(self)


@dataclass
class Credentials:
    """Who connects: never in a URL, never in a results file."""

    user: str | None = None
    password: str | None = None
    database: str | None = None
    ca_file: str | None = None


class Unsupported(ChbenchError):
    """The target cannot do what was asked (its capabilities say so)."""


@dataclass
class Sample:
    """One execution of one query on one target, as the target measured it."""

    query_id: str
    client_ms: float | None = None
    server_ms: float | None = None
    read_rows: int | None = None
    read_bytes: int | None = None
    result_rows: int | None = None
    result_bytes: int | None = None
    memory_bytes: int | None = None
    error: dict[str, Any] | None = None


@dataclass
class ServerInfo:
    """What probing the target found out."""

    version: str
    settings: dict[str, str] = field(default_factory=dict)  # name -> current value
    query_log: bool = False  # system.query_log can be read
    notes: list[str] = field(default_factory=list)

    def knows(self, setting: str) -> bool:
        return setting in self.settings

    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])

    def time_limit(self, seconds: float) -> str:
        """``max_execution_time`` for a limit of ``seconds`` on this server (``time_limit``)."""
        return time_limit(seconds, self.version_tuple())

    def unknown_settings(self, names: list[str], where: str = "") -> UsageError:
        """The one line for settings of the user's that this server does not know (run, load,
        replay refuse them before anything is sent), with the nearest names it has."""
        near = difflib.get_close_matches(names[0], list(self.settings), n=3)
        return UsageError(f"{where}unknown setting{'s' if len(names) > 1 else ''} {', '.join(names)} (not in "
                          f"system.settings of ClickHouse {self.version})"
                          + (f"; did you mean {', '.join(near)}?" if near else ""))


def time_limit(seconds: float, version: tuple[int, ...] | None = None) -> str:
    """``max_execution_time`` for a limit of ``seconds``. ClickHouse reads fractional seconds
    since 22.6 (PR 37187); before, "0.5" was read as 0 — no limit — and 1.5 as 1. Sent as whole
    seconds (rounded, at least 1), ``--timeout 0.2`` let ``SELECT sleep(0.5)`` finish as a 510 ms
    success on 26.9 (2026-12-07). An older or unknown server gets whole seconds, rounded up:
    never a limit shorter than asked (the client's own timeout still stops the query)."""
    if version is not None and version >= (22, 6):
        # milliseconds, no exponent: 1e-05 or 1e+07 is no number the server's parser takes
        # for sure, and anything rounding to 0 would mean no limit at all
        return f"{max(seconds, 0.001):.3f}".rstrip("0").rstrip(".")
    return str(max(1, math.ceil(seconds)))


def known_to_none(names: Iterable[str], infos: Iterable[ServerInfo]) -> list[str]:
    """The settings of ``names`` that none of these servers knows: a typo, refused in one
    line (run, replay, bisect); one that some know is newer than the others, sent where known."""
    infos = list(infos)
    return sorted(k for k in set(names) if not any(info.knows(k) for info in infos))


# How a server refuses a setting's value rather than a query, seen on 26.9: max_threads=abc
# (27, CANNOT_PARSE_INPUT_ASSERTION_FAILED), max_threads=-1 (70), max_execution_time=abc (72),
# a Bool (467), max_block_size=0 (36), a setting a readonly user may not change (164), and an
# enum's "Unexpected value of LoadBalancing" (212; each enum has a code of its own: 418 for
# JoinAlgorithm). Any other error of `SELECT 1` is left to the run, which records it per query:
# additional_result_filter='x > 1' fails `SELECT 1` and not the user's queries.
VALUE_REFUSED = frozenset({6, 27, 36, 69, 70, 72, 164, 467})
# a value a client library cannot encode for the server (18.16 over the native protocol
# takes settings typed): refused like the server's own refusal
SETTING_NOT_SENDABLE = "the client cannot send this setting's value"


def refused_setting(target: Target, settings: dict[str, str], user: Iterable[str],
                    where: str = "") -> UsageError | None:
    """``SELECT 1`` with ``settings``, untimed, before anything is measured; where the
    server refuses the value of one of the user's settings (``user``, then tried one at a
    time), the one line saying which and why. Before, ``--setting max_threads=abc`` ran
    the whole workload and every query failed with the server's parse error."""
    mine = sorted(k for k in set(user) if k in settings)
    if not mine or _refusal(target, settings) is None:
        return None
    base = {k: v for k, v in settings.items() if k not in mine}
    for k in mine:
        e = _refusal(target, {**base, k: settings[k]})
        if e is not None and (e.code in VALUE_REFUSED or "Unexpected value of" in e.message
                              or e.message.startswith(SETTING_NOT_SENDABLE)):
            version = f" {target.info.version}" if target.info else ""
            told = first_line(e.message) or f"code {e.code}"
            return UsageError(f"{where}setting {k}={settings[k]}: refused by ClickHouse{version}: {told}")
    return None


def _refusal(target: Target, settings: dict[str, str]) -> QueryError | None:
    try:
        target.execute("SELECT 1", settings, admin_query_id(), 30.0)
    except QueryError as e:
        return e
    except ServerLost as e:
        raise ConnectError(str(e)) from None
    return None


class Target(ABC):
    """Where queries go. Implementations: embedded, http, native (and fake, for tests)."""

    protocol: ClassVar[Protocol]
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, url: str) -> None:
        self.url = url  # description without secrets
        self.info: ServerInfo | None = None

    @property
    def kind(self) -> str:
        """The protocol's name, as results files record it."""
        return self.protocol.value

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        """Build (but do not connect) the target ``url`` names."""
        raise NotImplementedError

    # -- connecting --------------------------------------------------------------------
    @abstractmethod
    def connect(self) -> ServerInfo:
        """Open the connection and probe version and known settings.

        Raises ConnectError with one clear line when unreachable or refused."""

    def open(self) -> None:
        """Connect without the full probe (a load connection: the run probed once)."""
        try:
            self.execute("SELECT 1", {}, admin_query_id(), 30.0)
        except QueryError as e:
            raise ConnectError(f"{self.url}: {e.message}") from None
        except ServerLost as e:
            raise ConnectError(str(e)) from None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def new_session(self) -> str | None:
        """Fresh connections for the next measured session (``run --sessions``); a line for
        the results' notes where they cannot be as fresh as that."""
        self.close()
        self.connect()
        return None

    def keeps_compiled_code(self) -> bool:
        """Whether what the engine's JIT compiled before ``new_session`` still serves the
        session after it: a server's cache outlives its connections (the runner warms each
        later session up once); a target whose session started a new engine process says
        no, and is warmed up past the JIT again."""
        return True

    def reconnect(self) -> None:  # noqa: B027 - optional hook
        """Drop the connection; the next query opens a fresh one (load --reconnect)."""

    # -- timed ---------------------------------------------------------------------------
    @abstractmethod
    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        """Run one query and return its sample.

        A query the server rejects raises QueryError; a server that no longer
        answers raises ServerLost."""

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        """Like ``execute``, and also return the result itself (names, types and rows as
        canonical text) — for result checks (``clickbench run``). Timed the same way."""
        raise Unsupported(f"the {self.kind} target cannot return results")

    # -- untimed -------------------------------------------------------------------------
    @abstractmethod
    def query_rows(self, sql: str) -> list[list[str]]:
        """Run an administrative query and return its rows as text (TSV-decoded)."""

    def command(self, sql: str) -> None:
        """Run an administrative statement that returns no rows."""
        self.query_rows(sql)

    def query_bytes(self, sql: str) -> bytes:
        """An administrative query's result as the bytes of its FORMAT clause
        (``capabilities.formatted_results``)."""
        raise Unsupported(f"the {self.kind} target cannot return results in a FORMAT")

    def insert_stream(self, sql: str, body: Iterable[bytes], encoding: str | None = None,
                      params: dict[str, str] | None = None) -> int | None:
        """Stream ``body`` as the data of an INSERT for the server to parse
        (``capabilities.streaming_insert``); returns the server's written rows if known."""
        raise Unsupported(f"the {self.kind} target cannot stream an INSERT's data: use an http:// target")

    def statement(self, sql: str, settings: dict[str, str]) -> None:
        """A set-up or tear-down statement: untimed, with these settings, never read-only
        (writes are what set-up is for)."""
        sent = {k: v for k, v in settings.items() if k != "readonly"}
        self.execute(sql, sent, admin_query_id(), None)

    def data_key(self) -> tuple[object, ...]:
        """Which data this target reaches: targets with equal keys see the same tables (a
        test's set-up runs once for them). By default each target its own."""
        return ("target", id(self))

    def kill_query(self, query_id: str) -> None:
        """Best effort: stop a query still running on the server."""
        with contextlib.suppress(Exception):  # best effort only
            self.command(f"KILL QUERY WHERE query_id = '{query_id}' ASYNC")

    def probe(self, version: str) -> ServerInfo:
        """After connecting: record the settings the server knows and whether
        system.query_log exists yet (it appears at the first log flush)."""
        settings = {r[0]: r[1] for r in self.query_rows("SELECT name, value FROM system.settings")}
        info = ServerInfo(version=version, settings=settings)
        with contextlib.suppress(QueryError):
            self.query_rows("SELECT 1 FROM system.query_log LIMIT 0")
            info.query_log = True
        self.info = info
        return info

    def explain_note(self) -> str | None:
        """Why this target gives no server profile per run; None where it may give one."""
        if self.capabilities.query_log:
            return None
        return (f"{self.kind}: no system.query_log to read each run's counters from (a server target, "
                "--target http://… or server@VERSION, has them)")

    def has_table_function(self, name: str) -> bool:
        """Whether the server has the table function ``name`` (18.16 has no numbers_mt)."""
        return bool(self.query_rows(f"SELECT 1 FROM system.table_functions WHERE name = '{name}'"))

    def identify_runs(self) -> None:  # noqa: B027 - optional hook
        """Before connecting: make each timed run findable in query_log by the query_id it
        is given (a server is sent it anyway; chDB keeps the log only when asked, and takes
        no query_id: it is told it another way)."""

    def log_id_column(self) -> str:
        """The query_log column (or expression over its columns) holding the id chbench gave
        a run (``execute``'s query_id)."""
        return "query_id"

    def flush_logs(self) -> None:
        """SYSTEM FLUSH LOGS (spelled as the server's version wants)."""
        try:
            self.command("SYSTEM FLUSH LOGS")
        except QueryError:  # 18.x spelled it differently
            self.command("SYSTEM FLUSH SYSTEM TABLES")

    # -- description ---------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url}

    @property
    def label(self) -> str:
        """A short name for reports: host:port, or the URL of an in-process engine."""
        return self.url

    def is_local(self) -> bool:
        """The engine runs on this machine (in this process, or on a loopback address)."""
        return self.capabilities.in_process

    def preferred_settings(self) -> tuple[dict[str, str], list[str]]:
        """Settings this target asks for by default in load runs, and why (notes)."""
        return {}, []


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_exception_code(text: str) -> int | None:
    m = re.search(r"Code:\s*(\d+)", text)
    return int(m.group(1)) if m else None


def first_line(text: str, limit: int = 300) -> str:
    """The first line, without the "Stack trace:" that ends it when the trace follows; a
    bare "Code: 50." (clickhouse-driver puts the server's message on the next line) keeps
    the line after it."""
    lines = text.strip().splitlines()
    line = " ".join(lines[:2]) if len(lines) > 1 and re.fullmatch(r"Code: \d+\.", lines[0]) else \
        (lines[0] if lines else "")
    line = line.removesuffix("Stack trace:").rstrip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def server_message(message: str, limit: int = 60) -> str:
    """A server's error for a report: without ClickHouse's "Code: N. DB::Exception: " (the
    code's name ends the message) or, before 20.x, "Code: N, e.displayText() =
    DB::Exception: " and ", e.what() = DB::Exception" (18.16), and "…" where it is cut
    (seen: "… does not exist. (UN")."""
    text = re.sub(r"^Code: \d+(\.|, e\.displayText\(\) =) DB::Exception: ", "", message.strip())
    return first_line(re.sub(r", e\.what\(\) = DB::Exception$", "", text), limit)


AUTH_CODES = {192, 193, 194, 516}  # UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, AUTHENTICATION_FAILED
