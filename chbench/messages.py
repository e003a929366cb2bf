"""Every message that crosses a process or a network boundary, in one module: typed,
versioned, plain data (msgpack or JSON, never a pickle a peer could make run code).

Three routes carry them:

* master ↔ worker (``load --master``/``--worker``, Locust's custom messages): ``Hello``,
  then per level ``Job``, ``Go``, ``Stop``, ``Abort`` down (``Refuse`` for a late worker)
  and ``Ready`` or ``Failed``, ``Measured`` every tick, ``Done`` up — each tagged with the
  level (``job``) it belongs to;
* worker ↔ its lane host (JSON lines over the pipes): the same ``Job`` (with the worker's
  own password, which never crosses the network), ``Go`` or ``Stop``; the same replies;
* a load level ↔ its ``--workers`` processes (a multiprocessing queue between chbench's
  own processes): ``Ready``, ``Failed``, ``Measured``, ``Done`` with ``worker`` set and the
  stats as recorder objects.

Every message on the wire carries ``v``: a peer of another version is refused with one
line instead of misreading fields. (The engine child, ``engines/child.py``, keeps its own
two-line protocol: it runs another chDB release with the standard library only, on the
timed path, where a dataclass per query cost time — see ``targets/engine.py``.)"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from chbench.errors import ChbenchError

VERSION = 1


class ProtocolError(ChbenchError):
    """A message this chbench cannot read (another version, or not ours)."""


@dataclass
class Message:
    KIND: ClassVar[str] = ""

    def wire(self) -> dict[str, Any]:
        """Plain data for msgpack or JSON, with the protocol's version and the kind."""
        return {"v": VERSION, "kind": self.KIND, **{f.name: getattr(self, f.name) for f in fields(self)}}


KINDS: dict[str, type[Message]] = {}


def _kind(cls: type[Message]) -> type[Message]:
    KINDS[cls.KIND] = cls
    return cls


def read(data: dict[str, Any]) -> Message:
    """The message a peer sent; ProtocolError (one line) for another version or a stranger."""
    version = data.get("v")
    if version != VERSION:
        raise ProtocolError(f"a message of protocol version {version} (this chbench speaks {VERSION}): run the same "
                            "chbench version on the master and every worker")
    cls = KINDS.get(str(data.get("kind")))
    if cls is None:
        raise ProtocolError(f"a message of unknown kind {data.get('kind')!r}")
    return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


# -- down: master → worker → lane host ----------------------------------------------------------
@_kind
@dataclass
class Hello(Message):
    """A worker's first message, once its handlers are registered: only then is it given
    work (Locust's own "client_ready" comes before, while its runner is still being built)."""

    KIND: ClassVar[str] = "chbench_hello"
    processes: int = 1


@_kind
@dataclass
class Job(Message):
    """A worker's share of one level: worker ``index`` of ``of``."""

    KIND: ClassVar[str] = "chbench_job"
    job: int = 0
    index: int = 0
    of: int = 1
    config: dict[str, Any] | None = None  # protocol.encode_config: no password in it
    settings: list[dict[str, str]] | None = None
    password: str | None = None  # only on the pipe from a worker to its own lane host


@_kind
@dataclass
class Go(Message):
    KIND: ClassVar[str] = "chbench_go"
    job: int = 0


@_kind
@dataclass
class Stop(Message):
    KIND: ClassVar[str] = "chbench_stop"
    job: int = 0


@_kind
@dataclass
class Abort(Message):
    """A level's set-up failed elsewhere: drop this one's connections, do not start."""

    KIND: ClassVar[str] = "chbench_abort"
    job: int = 0


@_kind
@dataclass
class Refuse(Message):
    KIND: ClassVar[str] = "chbench_refuse"
    message: str = ""


# -- up: lanes → level, lane host → worker → master ---------------------------------------------
@_kind
@dataclass
class Ready(Message):
    KIND: ClassVar[str] = "chbench_ready"
    job: int = 0
    worker: int = 0
    processes: int = 1


@_kind
@dataclass
class Failed(Message):
    KIND: ClassVar[str] = "chbench_failed"
    job: int = 0
    worker: int = 0
    message: str = ""


@_kind
@dataclass
class Measured(Message):
    """What the lanes measured since the last tick (merged exactly by the receiver)."""

    KIND: ClassVar[str] = "chbench_stats"
    job: int = 0
    worker: int = 0
    stats: Any = None  # protocol.encode_stats on the wire; the recorder's parts on the queue
    status: dict[str, Any] | None = None


@_kind
@dataclass
class Done(Measured):
    KIND: ClassVar[str] = "chbench_done"


UP = (Ready, Failed, Measured, Done)
DOWN = (Job, Go, Stop, Abort, Refuse)
