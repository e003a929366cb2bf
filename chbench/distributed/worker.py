"""``chbench load --worker --master-host HOST[:PORT]``: a Locust worker runner that takes
its share of each level from the master, runs it in an engine subprocess
(``lane_host.py``: no gevent there) and relays that process's stats to the master as
they come (every 0.2 s), then its final counts."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from typing import Any, TextIO

from chbench import messages
from chbench.errors import EXIT_OK, EXIT_USAGE, ConnectError
from chbench.outcome import Outcome


def read_only(job: messages.Job) -> bool:
    """Whether every query of a job runs with readonly set (safe by default: a worker
    sends writes only if its own command line allows them, whatever a master asks)."""
    config = job.config or {}
    merged = [{**hs, **q.get("settings", {})} for hs in job.settings or [config["settings"]]
              for q in config["queries"]]
    return all(str(m.get("readonly", "0")) not in ("0", "") for m in merged)


class Relay:
    """The engine subprocess of the current level and the messages both ways."""

    def __init__(self, runner: Any, password: str | None, processes: int, err: TextIO,
                 allow_writes: bool = False) -> None:
        self.runner, self.password, self.processes, self.err = runner, password, processes, err
        self.allow_writes = allow_writes
        self.proc: Any = None
        self.job = 0
        self.exit_code = EXIT_OK
        self.leaving = False
        for kind, handler in ((messages.Job, self.on_job), (messages.Go, self.on_go), (messages.Stop, self.on_stop),
                              (messages.Abort, self.on_abort), (messages.Refuse, self.on_refuse)):
            runner.register_message(kind.KIND, handler)

    def say(self, line: str) -> None:
        self.err.write(f"chbench worker: {line}\n")
        self.err.flush()

    def send(self, message: messages.Message) -> None:
        self.runner.send_message(message.KIND, message.wire())

    def _write(self, message: messages.Message) -> None:
        """A line to the lane host (the same messages as JSON)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps(message.wire()) + "\n")
                self.proc.stdin.flush()
            except OSError:
                pass

    def _message(self, msg: Any) -> messages.Message | None:
        """What the master sent; None (said once) when another chbench version sent it."""
        try:
            return messages.read(msg.data or {})
        except messages.ProtocolError as e:
            self.say(str(e))
            return None

    def on_job(self, environment: Any, msg: Any, **kw: Any) -> None:
        import subprocess

        import gevent

        self.on_abort(environment, msg)  # a job replaces whatever is left of the last one
        job = self._message(msg)
        if not isinstance(job, messages.Job):
            return
        self.job = job.job
        if not self.allow_writes and not read_only(job):
            self.say("refused a job that lifts readonly (start this worker with --allow-writes to take it)")
            self.send(messages.Failed(job=self.job, message="this worker is read-only: the job lifts readonly (the "
                                                            "worker takes it only with --allow-writes)"))
            return
        c = {**(job.config or {}), "workers": self.processes}
        self.say(f"level {self.job}: worker {job.index + 1} of {job.of}, {c['concurrency']} connection"
                 f"{'s' if c['concurrency'] != 1 else ''}" + (f", {c['rate']:g} QPS" if c["rate"] else ""))
        self.proc = subprocess.Popen([sys.executable, "-m", "chbench.distributed.lane_host"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self._write(messages.Job(job=self.job, index=job.index, of=job.of, config=c, settings=job.settings,
                                 password=self.password))
        gevent.spawn(self._relay, self.proc, self.job)

    def _relay(self, proc: Any, job: int) -> None:
        replied = finished = False
        for line in proc.stdout:
            if job != self.job:
                break
            m = messages.read(json.loads(line))
            if isinstance(m, messages.Ready | messages.Failed):
                replied = True
                if isinstance(m, messages.Failed):
                    self.say(m.message)
            elif isinstance(m, messages.Done):
                finished = True
                m.status = m.status or {}
                if self.leaving:  # Ctrl-C here: the master reports it as a worker that stopped early
                    m.status["stopped_early"] = "interrupted on the worker"
                self.say(f"level {job} done: {m.status.get('started', 0)} queries started")
            self.send(m)
        code = proc.wait()
        if job == self.job and not finished:
            why = f"the engine process exited with code {code}"
            if replied:
                self.send(messages.Done(job=job, stats=[], status={"fatal": f"worker engine lost: {why}"}))
            else:
                self.send(messages.Failed(job=job, message=why))

    def on_go(self, environment: Any, msg: Any, **kw: Any) -> None:
        m = self._message(msg)
        if isinstance(m, messages.Go) and m.job == self.job:
            self._write(m)

    def on_stop(self, environment: Any, msg: Any, **kw: Any) -> None:
        m = self._message(msg)
        if isinstance(m, messages.Stop) and m.job == self.job:
            self._write(m)

    def on_abort(self, environment: Any, msg: Any, **kw: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # end of input: the engine stops and exits
            self.proc.wait()
        self.proc = None

    def on_refuse(self, environment: Any, msg: Any, **kw: Any) -> None:
        m = self._message(msg)
        self.say(f"refused by the master: {m.message if isinstance(m, messages.Refuse) else 'another version'}")
        self.exit_code = EXIT_USAGE
        self.leave()

    def leave(self) -> None:
        """Tell the master we go (Locust's quit message), then stop the runner."""
        from locust.rpc import Message

        self.leaving = True
        self.close()
        with contextlib.suppress(Exception):  # leaving anyway
            self.runner.client.send(Message("quit", None, self.runner.client_id))
        self.runner.greenlet.kill(block=False)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def run_worker(master: tuple[str, int], password: str | None, processes: int, err: TextIO,
               allow_writes: bool = False) -> int:
    """Serve the master until it quits (0), refuses us (2) or Ctrl-C (130)."""
    import gevent
    import gevent.event
    from locust.env import Environment
    from locust.runners import CONNECT_RETRY_COUNT, CONNECT_TIMEOUT

    host, port = master
    err.write(f"chbench worker: connecting to the master at {host}:{port}\n")
    err.flush()
    env = Environment(user_classes=[])
    try:
        runner = env.create_worker_runner(host, port)
    except ConnectionError:
        waited = CONNECT_TIMEOUT * CONNECT_RETRY_COUNT
        raise ConnectError(f"no master answered at {host}:{port} within {waited} s") from None
    relay = Relay(runner, password, processes, err, allow_writes)
    relay.say(f"connected as {runner.client_id}")
    relay.send(messages.Hello(processes=processes))
    ctrl_c = gevent.event.Event()
    gevent.signal_handler(signal.SIGINT, ctrl_c.set)  # gevent's own: no traceback printed by its hub
    served = gevent.spawn(runner.greenlet.join)
    gevent.wait([served, ctrl_c], count=1)
    if ctrl_c.is_set():
        relay.say("interrupted: the engine stops, the master is told")
        relay.leave()
        return Outcome.INTERRUPTED.exit_code
    relay.close()
    relay.say("the master quit" if relay.exit_code == EXIT_OK else "stopped")
    return relay.exit_code
