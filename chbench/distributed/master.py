"""``chbench load --master``: Locust's master runner holds the connection to every worker
(its heartbeats say who is alive); chbench sends each worker its share of a level and
merges what they ship back, exactly, as ``--workers`` merges processes.

A level on the master is a :class:`MasterSource` — the same interface as the local
sources (``load/levels.py``), so every level, a ``-C`` sweep, a capacity search
(``--slo``), ``--out``, ``--json``, the report and ``--metrics-port`` work unchanged."""

from __future__ import annotations

import signal
import time
from typing import Any, TextIO

from chbench import messages
from chbench.distributed.protocol import decode_stats, encode_config
from chbench.errors import ConnectError, UsageError
from chbench.load.config import LoadConfig
from chbench.load.levels import sum_statuses
from chbench.load.recorder import Key, Stats

SILENT_S = 5.0  # a running worker that ships nothing for this long is lost (it ships every 0.2 s)
SETUP_S = 120.0  # how long workers may take to open their connections


def parse_hostport(text: str, default_port: int, flag: str) -> tuple[str, int]:
    """``HOST``, ``HOST:PORT``, ``[v6]:PORT`` or ``:PORT``/``PORT`` (then the host is '*')."""
    host, sep, port = text.rpartition(":") if text.count(":") <= 1 or text.startswith("[") else ("", "", text)
    if not sep:
        host, port = (text, "") if not text.isdigit() else ("", text)
    try:
        number = int(port) if port else default_port
    except ValueError:
        raise UsageError(f"{flag} '{text}': not HOST:PORT") from None
    if not 0 < number < 65536:
        raise UsageError(f"{flag} '{text}': no such port")
    return host.strip("[]"), number


class Coordinator:
    """The Locust master runner, the workers it has, and the policy for those that
    join late or go missing."""

    def __init__(self, bind: tuple[str, int], expect: int, max_wait: float, late: str, stop_on_loss: bool,
                 err: TextIO) -> None:
        from gevent.queue import Queue
        from locust.env import Environment
        from locust.exception import RPCError

        self.bind = (bind[0] or "*", bind[1])
        self.expect, self.max_wait, self.late, self.stop_on_loss = expect, max_wait, late, stop_on_loss
        self.err = err
        self.env = Environment(user_classes=[])
        try:
            self.runner: Any = self.env.create_master_runner(*self.bind)
        except (SystemExit, RPCError) as e:  # Locust exits on a busy port, or raises
            raise UsageError(f"--master-bind {self.bind[0]}:{self.bind[1]}: cannot listen there "
                             f"({getattr(e, 'args', [''])[0] or 'the port is in use'})") from None
        self.inbox: Any = Queue()
        for kind in messages.UP:
            self.runner.register_message(kind.KIND, self._inbound)
        self.runner.register_message(messages.Hello.KIND, self._hello)
        self.jobs = 0
        self.running = False  # a level has started: a worker that connects now is late
        self.refused: set[str] = set()
        self.known: set[str] = set()  # workers that said hello: their handlers are there
        self.t0 = time.monotonic()

    def _inbound(self, environment: Any, msg: Any, **kw: Any) -> None:
        try:
            self.inbox.put((msg.node_id, messages.read(msg.data or {})))
        except messages.ProtocolError as e:
            self.say(f"worker {msg.node_id}: {e}")

    def _hello(self, environment: Any, msg: Any, **kw: Any) -> None:
        client_id = msg.node_id
        try:
            messages.read(msg.data or {})
        except messages.ProtocolError as e:  # another chbench: never given work
            self.refused.add(client_id)
            self.send(messages.Refuse(message=str(e)), client_id)
            self.say(f"worker {client_id} refused: {e}")
            return
        first = client_id not in self.known
        self.known.add(client_id)
        if not self.running or not first:
            return
        if self.late == "refuse":
            self.refused.add(client_id)
            self.send(messages.Refuse(message="the run had started (the master takes late workers with "
                                              "--late-workers add)"), client_id)
            self.say(f"worker {client_id} joined at {self.elapsed():.1f} s, after the run started: refused")
        else:
            self.say(f"worker {client_id} joined at {self.elapsed():.1f} s: it takes a share from the next level")

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, line: str) -> None:
        self.err.write(f"chbench: {line}\n")
        self.err.flush()

    def ready(self) -> list[str]:
        """Connected workers that said hello and were not refused, in the order they
        first connected."""
        ids = [c.id for c in self.runner.clients.ready if c.id in self.known and c.id not in self.refused]
        return sorted(ids, key=self.runner.get_worker_index)

    def wait_for_workers(self) -> None:
        import gevent
        import gevent.event

        deadline = time.monotonic() + self.max_wait
        where = f"{self.bind[0]}:{self.bind[1]}"
        self.say(f"master at {where}: waiting for {self.expect} worker{'s' if self.expect > 1 else ''}")
        ctrl_c = gevent.event.Event()
        handler = gevent.signal_handler(signal.SIGINT, ctrl_c.set)  # no traceback from gevent's hub
        try:
            while len(self.ready()) < self.expect:
                if ctrl_c.is_set():
                    raise KeyboardInterrupt
                if self.max_wait and time.monotonic() >= deadline:
                    raise ConnectError(f"{len(self.ready())} of {self.expect} workers connected to the master at "
                                       f"{where} within {self.max_wait:g} s (--expect-workers-max-wait)")
                gevent.sleep(0.1)
        finally:
            handler.cancel()
        self.say(f"{len(self.ready())} worker{'s' if len(self.ready()) > 1 else ''} connected: "
                 + ", ".join(self.ready()))
        self.t0 = time.monotonic()

    def sources(self, cfg: LoadConfig, settings: list[dict[str, str]], level: int) -> MasterSource:
        return MasterSource(self, cfg, settings, level)

    def send(self, message: messages.Message, node: str) -> None:
        self.runner.send_message(message.KIND, message.wire(), client_id=node)

    def close(self) -> None:
        import gevent

        self.runner.quit()  # Locust's quit message to every worker
        gevent.sleep(0.2)


class MasterSource:
    """One level spread over the connected workers: worker i of n runs ``cfg.share(i, n,
    level)`` (connections, iterations and open-loop rate split as ``--workers`` splits
    them; the fixed schedule interleaved) in its own engine process."""

    def __init__(self, coord: Coordinator, cfg: LoadConfig, settings: list[dict[str, str]], level: int) -> None:
        nodes = coord.ready()
        if not nodes:
            raise ConnectError("no worker is connected to the master")
        self.coord, self.cfg, self.settings, self.level = coord, cfg, settings, level
        self.nodes = nodes[:max(1, min(len(nodes), level, cfg.iterations or level))]  # none with 0 iterations
        self.job = 0
        self.statuses: dict[int, dict[str, Any]] = {}
        self.done: set[int] = set()
        self.lost: dict[int, tuple[float, str]] = {}  # worker -> (seconds into the level, why)
        self.last_seen: dict[int, float] = {}
        self.fatal: str | None = None
        self.t0 = 0.0

    # -- set-up: every worker opens its connections; one that cannot is dropped ---------------
    def setup(self) -> None:
        while True:
            self.coord.jobs += 1
            self.job = self.coord.jobs
            n = len(self.nodes)
            for i, node in enumerate(self.nodes):
                share = self.cfg.share(i, n, self.level)
                if share.query_id_prefix:
                    share.query_id_prefix = f"{share.query_id_prefix}{i}."  # unique across workers
                self.coord.send(messages.Job(job=self.job, index=i, of=n, config=encode_config(share),
                                             settings=self.settings), node)
            failed = self._replies()
            if not failed:
                break
            ok = [node for node in self.nodes if node not in failed]
            for node, message in failed.items():
                self.coord.say(f"worker {node}: {message}")
            for node in ok:
                self.coord.send(messages.Abort(job=self.job), node)
            if self.coord.stop_on_loss or not ok:
                node, message = next(iter(failed.items()))
                raise ConnectError(f"worker {node}: {message}")
            self.coord.say(f"the level goes on with {len(ok)} worker{'s' if len(ok) > 1 else ''}: the load is split "
                           "again over them")
            self.nodes = ok
        self.coord.running = True

    def _replies(self) -> dict[str, str]:
        from gevent.queue import Empty

        waiting = set(self.nodes)
        failed: dict[str, str] = {}
        deadline = time.monotonic() + SETUP_S
        while waiting:
            try:
                node, m = self.coord.inbox.get(timeout=0.5)
            except Empty:
                for node in list(waiting):
                    if self._gone(node):
                        failed[node] = "lost before the level started"
                        waiting.discard(node)
                if time.monotonic() > deadline:
                    failed.update({node: f"not ready within {SETUP_S:g} s" for node in waiting})
                    break
                continue
            if getattr(m, "job", None) != self.job or node not in waiting:
                continue
            waiting.discard(node)
            if isinstance(m, messages.Failed):
                failed[node] = m.message or "could not start"
        return failed

    def _gone(self, node: str) -> str | None:
        from locust.runners import HEARTBEAT_LIVENESS, STATE_MISSING

        client = self.coord.runner.clients.get(node)
        if client is None:
            return "it left the master"
        if client.state == STATE_MISSING:
            return f"no heartbeat for {HEARTBEAT_LIVENESS} s"
        return None

    # -- the level ------------------------------------------------------------------------------
    def start(self) -> None:
        self.t0 = time.monotonic()
        for i, node in enumerate(self.nodes):
            self.last_seen[i] = self.t0
            self.coord.send(messages.Go(job=self.job), node)

    def pump(self, timeout: float) -> tuple[list[tuple[int, dict[Key, Stats]]], bool]:
        from gevent.queue import Empty

        index = {node: i for i, node in enumerate(self.nodes)}
        parts = []
        end = time.monotonic() + timeout
        while True:
            try:
                node, m = self.coord.inbox.get(timeout=max(0.001, end - time.monotonic()))
            except Empty:
                break
            i = index.get(node)
            if i is not None and isinstance(m, messages.Measured) and m.job == self.job:  # Done is a Stats too
                self.last_seen[i] = time.monotonic()
                if m.stats:
                    parts.append((i, decode_stats(m.stats)))
                self.statuses[i] = m.status or {}
                if isinstance(m, messages.Done):
                    self.done.add(i)
                    if self.statuses[i].get("stopped_early"):
                        self._lose(i, self.statuses[i]["stopped_early"])
            if time.monotonic() >= end:
                break
        self._check_lost()
        return parts, len(self.done) == len(self.nodes)

    def _check_lost(self) -> None:
        now = time.monotonic()
        for i, node in enumerate(self.nodes):
            if i in self.done:
                continue
            why = self._gone(node) or (f"nothing shipped for {SILENT_S:g} s" if now - self.last_seen[i] > SILENT_S
                                       else None)
            if why is not None:
                self._lose(i, why)

    def _lose(self, i: int, why: str) -> None:
        node = self.nodes[i]
        at = time.monotonic() - self.t0
        self.lost[i] = (at, why)
        self.done.add(i)
        self.coord.say(f"worker {node} lost at {at:.1f} s into the level ({why}); what it shipped before stays "
                       + ("counted; --stop-on-worker-loss stops the run" if self.coord.stop_on_loss
                          else "counted; the run goes on"))
        if self.coord.stop_on_loss and self.fatal is None:
            self.fatal = f"worker {node} lost at {at:.1f} s into the level ({why})"
            self.stop()

    def stop(self) -> None:
        for i, node in enumerate(self.nodes):
            if i not in self.done:
                self.coord.send(messages.Stop(job=self.job), node)

    def status(self) -> dict[str, Any]:
        return sum_statuses(self.statuses.values(), self.fatal)

    def close(self) -> None:
        self.stop()  # workers still running (Ctrl-C's second press) stop and close themselves

    def drain(self) -> list[tuple[int, dict[Key, Stats]]]:
        parts, _ = self.pump(0.0)
        return parts

    def names(self) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for i, node in enumerate(self.nodes):
            out[i] = {"name": node}
            if i in self.lost:
                out[i].update(lost_at_s=round(self.lost[i][0], 3), lost_reason=self.lost[i][1])
        return out
