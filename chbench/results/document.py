"""The header every chbench results file shares, and the base of the typed documents.

Every file starts ``{"schema": {"name": "chbench.results", "version": 1}, "kind", "status",
"meta"}``; the rest belongs to its kind (``run.py``, ``load.py``, ``clickbench.py``,
``transfer.py``). A kind registers itself by subclassing :class:`Document`; reading a file
(``open.py``) finds the class by ``kind`` once. Keys a reader does not know are kept and
written back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.errors import UsageError
from chbench.results.environment import host_info, now_iso, sanitized_argv, tool_info

SCHEMA_NAME = "chbench.results"
SCHEMA_VERSION = 1
STATUSES = ("running", "complete", "interrupted", "server_lost", "failed")

_META_KEYS = ("tool", "started_at", "ended_at", "host", "command")


@dataclass(kw_only=True)
class Meta:
    """Who wrote the file, on what machine, when, from which command line."""

    tool: dict[str, Any] = field(default_factory=tool_info)
    started_at: str = field(default_factory=now_iso)
    ended_at: str | None = None  # the last write; final once status is no longer running
    host: dict[str, Any] = field(default_factory=host_info)
    command: list[str] = field(default_factory=sanitized_argv)  # passwords masked
    extra: dict[str, Any] = field(default_factory=dict)  # the kind's own: mode, options, stop_reason, …

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "started_at": self.started_at, "ended_at": self.ended_at, "host": self.host,
                "command": self.command, **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Meta:
        return cls(tool=d.get("tool") or {}, started_at=str(d.get("started_at") or ""), ended_at=d.get("ended_at"),
                   host=d.get("host") or {}, command=list(d.get("command") or []),
                   extra={k: v for k, v in d.items() if k not in _META_KEYS})


@dataclass(kw_only=True)
class Document:
    """A chbench results file of one kind. Subclasses set ``kind`` and ``KEYS`` and
    implement ``body`` (their keys, in file order) and ``parse`` (the reverse)."""

    kind: ClassVar[str] = ""
    KEYS: ClassVar[tuple[str, ...]] = ()  # the kind's own top-level keys, in file order
    registry: ClassVar[dict[str, type[Document]]] = {}

    status: str = "running"
    meta: Meta = field(default_factory=Meta)
    extra: dict[str, Any] = field(default_factory=dict)  # top-level keys this version does not know

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            Document.registry[cls.kind] = cls

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of this kind's own fields, from the file's object."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"schema": {"name": SCHEMA_NAME, "version": SCHEMA_VERSION}, "kind": self.kind,
                "status": self.status, "meta": self.meta.to_json(), **self.body(), **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any], path: str) -> Document:
        """The typed document of a file's object (its kind picks the class)."""
        kind = str(d.get("kind") or "run")  # the first files had no kind: runs
        sub = Document.registry.get(kind)
        if sub is None:
            raise UsageError(f"{path}: a chbench '{kind}' results file, a kind this version does not know")
        known = {"schema", "kind", "status", "meta", *sub.KEYS}
        try:
            fields = sub.parse(d)
            return sub(status=str(d.get("status") or "complete"), meta=Meta.from_json(d.get("meta") or {}),
                       extra={k: v for k, v in d.items() if k not in known}, **fields)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UsageError(f"{path}: malformed chbench '{kind}' results file ({type(e).__name__}: {e})") from None

    @property
    def stop_reason(self) -> str | None:
        return self.meta.extra.get("stop_reason")


def present(obj: Any, *keys: str) -> dict[str, Any]:
    """The members of ``obj`` named ``keys`` that are set (optional keys: absent when None)."""
    return {k: v for k in keys if (v := getattr(obj, k)) is not None}


def opt(d: dict[str, Any], key: str) -> dict[str, Any] | None:
    """An optional object member (None when absent)."""
    v = d.get(key)
    return v if isinstance(v, dict) else None
