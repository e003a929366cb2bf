"""Machine-state probes, read between rounds (untimed).

``ClientProbe`` reads this host through psutil: the load average, the CPU's busy,
iowait and steal shares since the last reading (the kernel's counters, all CPUs), the
CPU frequency where the kernel exposes it, and — the reading that tells a neighbour
from the benchmark itself — the CPU used by processes other than chbench and the
engine, in cores. The engine is chbench's own process for the embedded engine; for a
server on this host, the process listening on its port.

``ServerProbe`` reads a server host's own view from ``system.asynchronous_metrics``
(load average, OS user/system/iowait/steal time normalized to one CPU) where the server
has them (ClickHouse ≥ 21.x; 18.16 has none of them, and servers built on
clickhouse-local — chDB's — have no such table: said in a note, nothing invented).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from chbench.errors import QueryError, ServerLost
from chbench.targets import Target

# the asynchronous metrics read from a server, and the names they are stored under
SERVER_METRICS = {
    "LoadAverage1": "load1",
    "OSUserTimeNormalized": "user",
    "OSSystemTimeNormalized": "system",
    "OSIOWaitTimeNormalized": "iowait",
    "OSStealTimeNormalized": "steal",
    "OSIdleTimeNormalized": "idle",
}
SERVER_SQL = ("SELECT metric, value FROM system.asynchronous_metrics WHERE metric IN ("
              + ", ".join(f"'{m}'" for m in SERVER_METRICS) + ")")
UNKNOWN_TABLE = 60


def _busy(t: Any) -> float:
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def _total(t: Any) -> float:
    return _busy(t) + float(t.idle + getattr(t, "iowait", 0.0) + getattr(t, "steal", 0.0))


class ClientProbe:
    """This host's state since the previous reading (the first: since the probe began)."""

    def __init__(self, engine_ports: list[int] | None = None) -> None:
        import psutil

        self._psutil = psutil
        self.cpus = psutil.cpu_count() or 1
        self.notes: list[str] = []
        self._me = psutil.Process()
        self._engines = self._engine_processes(engine_ports or [])
        self._last = self._counters()

    @property
    def engine_pids(self) -> list[int]:
        return [p.pid for p in self._engines]

    def _engine_processes(self, ports: list[int]) -> list[Any]:
        """The processes serving the local targets' ports (their CPU is the engine's)."""
        if not ports:
            return []
        try:
            conns = self._psutil.net_connections(kind="tcp")
        except (self._psutil.AccessDenied, OSError):
            self.notes.append("local server's process not found (no permission to list sockets): its CPU counts "
                              "as other processes'")
            return []
        pids = {c.pid for c in conns if c.status == "LISTEN" and c.laddr and c.laddr.port in ports and c.pid}
        procs = []
        for pid in pids - {os.getpid()}:
            with contextlib.suppress(self._psutil.Error):
                procs.append(self._psutil.Process(pid))
        return procs

    def _own_cpu(self) -> float:
        """CPU seconds of chbench (with its children) and of the local engines."""
        total = 0.0
        for p in [self._me, *self._engines]:
            with contextlib.suppress(self._psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
                for c in p.children(recursive=True) if p is self._me else []:
                    with contextlib.suppress(self._psutil.Error):
                        ct = c.cpu_times()
                        total += ct.user + ct.system
        return total

    def _counters(self) -> tuple[float, Any, float]:
        return time.monotonic(), self._psutil.cpu_times(), self._own_cpu()

    def read(self) -> dict[str, Any]:
        """One reading: shares of all CPUs' time (0–1), cores for other processes."""
        now = self._counters()
        (t0, c0, own0), (t1, c1, own1) = self._last, now
        self._last = now
        total = max(_total(c1) - _total(c0), 1e-9)
        busy_s = _busy(c1) - _busy(c0)
        dt = max(t1 - t0, 1e-9)
        out: dict[str, Any] = {
            "seconds": round(dt, 3),
            "load1": round(os.getloadavg()[0], 3),
            "cpus": self.cpus,
            "busy": round(busy_s / total, 4),
            "iowait": round((getattr(c1, "iowait", 0.0) - getattr(c0, "iowait", 0.0)) / total, 4),
            "steal": round((getattr(c1, "steal", 0.0) - getattr(c0, "steal", 0.0)) / total, 4),
            # busy CPU time of everything else, in cores (1.0 = one core busy all the time)
            "others_cores": round(max(0.0, busy_s - (own1 - own0)) / dt, 4),
        }
        with contextlib.suppress(Exception):  # not every kernel exposes a frequency
            f = self._psutil.cpu_freq()
            if f and f.current:
                out["freq_mhz"] = round(float(f.current), 1)
        return out


class ServerProbe:
    """A server host's own view, from its asynchronous metrics."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.available = True
        self.note: str | None = None

    def read(self) -> dict[str, Any] | None:
        if not self.available:
            return None
        try:
            rows = self.target.query_rows(SERVER_SQL)
        except QueryError as e:
            self.available = False
            self.note = ("server host not probed: this server has no system.asynchronous_metrics"
                         if e.code == UNKNOWN_TABLE else f"server host not probed: {e.message}")
            return None
        except ServerLost:
            return None  # the next query reports it; a probe never ends a run
        out = {SERVER_METRICS[m]: round(float(v), 4) for m, v in rows if m in SERVER_METRICS}
        if not out:
            self.available = False
            self.note = ("server host not probed: this ClickHouse has no OS metrics in "
                         "system.asynchronous_metrics (they came with 21.x)")
            return None
        if "user" in out or "system" in out:
            out["busy"] = round(out.get("user", 0.0) + out.get("system", 0.0), 4)
        return out
