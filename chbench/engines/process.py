"""The parent's side of an engine child process (``child.py``): start it, send a query, read
the answer with a deadline, kill it.

A worker that exits (the engine crashed, or was killed) is a lost engine: ``EngineLost``
with the last lines it wrote to stderr. A query that outlives its timeout gets the worker
killed (the only way to stop a query inside chDB from outside) and marked ``killed``: its
owner starts a fresh one on the same data directory (``targets/engine.py``, which also
SETs every setting again there).

Measured here (chdb-core 26.9, ``SELECT 1``): one JSON line each way and the raw result
bytes, no pickling, no thread hand-off — ~0.1 ms back to back; ~0.3 ms after the pause
of the machine probes between rounds, which is waking the two processes (README,
"Measured (the bars of engines …)").
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORKER = str(Path(__file__).with_name("child.py"))
START_TIMEOUT = 120.0  # importing a chDB release and starting its engine: ~1-3 s here


class EngineLost(Exception):
    """The worker process is gone (crashed, killed, or never started)."""


class EngineTimeout(Exception):
    """No answer within the query's timeout: the worker was killed."""


class WorkerProcess:
    """One engine release in a process of its own."""

    def __init__(self, site: str | None, data_dir: str, label: str, config: str | None = None) -> None:
        self.site, self.data_dir, self.label, self.config = site, data_dir, label, config
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready: dict[str, Any] = {}
        self._buf = bytearray()
        self.killed = False  # by us, after a timeout: its owner starts a fresh worker
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the worker's stderr, for as long as it lives

    # -- life --------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        env = dict(os.environ)
        if self.site:  # the release first: it shadows chbench's own chDB
            env["PYTHONPATH"] = os.pathsep.join([self.site, *filter(None, [env.get("PYTHONPATH")])])
        self._buf.clear()
        self.proc = subprocess.Popen([sys.executable, WORKER, self.data_dir, *filter(None, [self.config])],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, env=env, start_new_session=True)
        head, _ = self._answer(time.monotonic() + START_TIMEOUT)
        if not head.get("ready"):
            self.kill()
            raise EngineLost(f"{self.label}: the engine did not start: {head.get('error', 'no reason given')}")
        self.ready = head
        return head

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._close_pipes()

    def close(self) -> None:
        """Ask the worker to exit (its sessions closed cleanly); kill it if it will not."""
        if self.alive:
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self._log.close()

    def _close_pipes(self) -> None:
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    with contextlib.suppress(OSError):
                        f.close()

    # -- queries -----------------------------------------------------------------------
    def query(self, role: str, sql: str, fmt: str, timeout: float | None) -> tuple[dict[str, Any], bytes]:
        """The worker's answer head and the result's bytes."""
        if not self.alive:
            raise EngineLost(self._lost_reason())
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"op": "query", "role": role, "sql": sql, "fmt": fmt}).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise EngineLost(self._lost_reason()) from None
        deadline = time.monotonic() + timeout if timeout else None
        try:
            return self._answer(deadline)
        except EngineTimeout:
            self.kill()
            self.killed = True
            raise

    def prepare(self) -> None:
        """Tell the worker a timed query comes next: it polls its pipe instead of sleeping
        (for at most 20 ms), so the query is not timed waking a sleeping process."""
        if not self.alive:
            return  # the query itself reports the loss
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(b'{"op": "prepare"}\n')
            self.proc.stdin.flush()
            self._answer(time.monotonic() + START_TIMEOUT)
        except (OSError, EngineTimeout):
            raise EngineLost(self._lost_reason()) from None

    def _answer(self, deadline: float | None) -> tuple[dict[str, Any], bytes]:
        line = self._read_until_newline(deadline)
        head = json.loads(line)
        n = int(head.get("n", 0))
        return head, self._read_exact(n, deadline)

    def _fill(self, deadline: float | None) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        if deadline is not None:  # without a deadline a blocking read is one system call less
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise EngineTimeout()
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            if self.proc.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=2)
            raise EngineLost(self._lost_reason())
        self._buf += chunk

    def _read_until_newline(self, deadline: float | None) -> bytes:
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[: i + 1]
                return line
            self._fill(deadline)

    def _read_exact(self, n: int, deadline: float | None) -> bytes:
        while len(self._buf) < n:
            self._fill(deadline)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _lost_reason(self) -> str:
        code = self.proc.poll() if self.proc is not None else None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        tail = ""
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0)
            lines = [ln for ln in self._log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            tail = f": {lines[-1][:200]}" if lines else ""
        return f"{self.label}: engine process lost ({how}){tail}"
