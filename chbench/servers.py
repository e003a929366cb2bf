"""Real ClickHouse servers that chbench starts itself: for its tests, its benchmark
scripts and ``chbench clickbench crash-test`` (which must kill -9 and restart one).

* ``ModernServer`` — the ClickHouse 26.9 server that ships inside the chDB wheel,
  started in a process of its own with HTTP and native TCP listeners
  (recipe in ``../shared/SERVERS.md``).
* ``LegacyServer`` — the Debian ClickHouse 18.16 ``clickhouse-server``.

Both bind 127.0.0.1 on free ports and are stopped (and their data removed) by ``stop()``.
Run ``python -m tests.engines modern`` to start one by hand.

"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TypeVar

_MODERN_SERVER_CODE = r"""
import os, sys, threading
import chdb._chdb as low
fifo = sys.argv[1]
data = sys.argv[2]
sql = "SYSTEM START LISTEN QUERIES ALL; SELECT count() FROM file('%s', 'LineAsString')" % fifo
def serve():
    try:
        low.query(sql, "TSV", path=data)
    except Exception as e:  # pragma: no cover - reported to the parent
        print("server error:", e, file=sys.stderr, flush=True)
def orphaned():  # the process that started this server is gone (killed): stop with it
    parent = os.getppid()
    while os.getppid() == parent:
        threading.Event().wait(0.5)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
t = threading.Thread(target=serve)
t.start()
t.join()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(port: int, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not answer /ping within {timeout}s")


def _wait_tcp(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on TCP port {port}")


def _make_certificates(directory: Path) -> str:
    """A private CA and a server certificate for localhost/127.0.0.1 signed by it."""
    d = str(directory)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=chbench test CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr")
    (directory / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-extfile", "san.ext", "-out", "server.crt")
    return f"{d}/ca.pem"


S = TypeVar("S", bound="_Server")


class _Server:
    http_port: int
    tcp_port: int
    proc: subprocess.Popen[bytes]
    workdir: Path

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def native_url(self) -> str:
        return f"clickhouse://127.0.0.1:{self.tcp_port}"

    def _start(self, argv: list[str], env: dict[str, str] | None, cleanup: bool = True) -> None:
        """Start the server process and wait until HTTP and TCP answer."""
        self._argv, self._env = argv, env
        with open(self.workdir / "stderr.log", "ab") as log:
            # stdin from /dev/null: clickhouse-local reads a stdin that is a file as a table
            # of data (an empty regular file inherited as stdin made it fail with
            # CANNOT_DETECT_FORMAT before listening)
            self.proc = subprocess.Popen(argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        try:
            _wait_http(self.http_port, 60, self.proc)
            _wait_tcp(self.tcp_port, 10)
        except Exception:
            self.kill()
            if cleanup:
                self._cleanup()
            raise
        atexit.register(self.stop)  # never leave a server behind, even if a fixture is skipped

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        """Start the server again on the same data and ports (after ``kill``)."""
        if self.proc.poll() is None:
            raise RuntimeError("the server is still running")
        deadline = time.monotonic() + 30
        while True:  # the killed process's listening sockets may linger for a moment
            try:
                self._start(self._argv, self._env, cleanup=False)
                return
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 20 s), then the data removed: a clickhouse-server's own
        shutdown (ModernServer stops its own way)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._cleanup()


class ModernServer(_Server):
    """ClickHouse 26.9 from the chDB wheel, serving HTTP and native TCP; or, with ``site``,
    the build of an installed engine (``chbench/engines``) that can listen, on ``data_dir``
    (kept after stop) or a temporary one."""

    def __init__(self, site: str | None = None, data_dir: str | None = None, operator_log: bool = True) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="chbench-modern-"))
        self.http_port, self.tcp_port = free_port(), free_port()
        home = self.workdir / "home"
        (home / ".clickhouse-local").mkdir(parents=True)
        (home / ".clickhouse-local" / "config.xml").write_text(
            "<clickhouse><listen_host>127.0.0.1</listen_host>"
            f"<http_port>{self.http_port}</http_port><tcp_port>{self.tcp_port}</tcp_port>"
            "<keep_alive_timeout>3</keep_alive_timeout>"
            "<query_log><database>system</database><table>query_log</table>"
            "<flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>"
            # each operator's time per query, for chbench explain (operator_log=False: a
            # server that keeps query_log only, as many do)
            + ("<processors_profile_log><database>system</database><table>processors_profile_log</table>"
               "<flush_interval_milliseconds>1000</flush_interval_milliseconds></processors_profile_log>"
               # sampled stacks: chDB builds never sample, but the table exists, as on a real server
               "<trace_log><database>system</database><table>trace_log</table>"
               "<flush_interval_milliseconds>1000</flush_interval_milliseconds></trace_log>"
               if operator_log else "")
            + "</clickhouse>"
        )
        self.fifo = self.workdir / "stop.fifo"
        os.mkfifo(self.fifo)
        data = Path(data_dir) if data_dir else self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOME=str(home))
        if site:
            env["PYTHONPATH"] = os.pathsep.join([site, *filter(None, [os.environ.get("PYTHONPATH")])])
        self._start([sys.executable, "-c", _MODERN_SERVER_CODE, str(self.fifo), str(data)], env)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"stop\n")
                os.close(fd)
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._cleanup()


LEGACY_BINARY = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
LEGACY_CONFIG_DIR = Path("/etc/clickhouse-server")


class LegacyServer(_Server):
    """The Debian ClickHouse 18.16 server with its own config and data in a temp dir."""

    def __init__(self, extra_users_xml: str = "", tls: bool = False) -> None:
        if not Path(LEGACY_BINARY).exists():
            raise RuntimeError("clickhouse-server (Debian package) is not installed")
        self.workdir = Path(tempfile.mkdtemp(prefix="chbench-legacy-"))
        self.http_port, self.tcp_port = free_port(), free_port()
        self.https_port = self.tcp_secure_port = 0
        config = (LEGACY_CONFIG_DIR / "config.xml").read_text()
        w = self.workdir
        for tag, value in [
            ("path", f"{w}/data/"),
            ("tmp_path", f"{w}/tmp/"),
            ("user_files_path", f"{w}/user_files/"),
            ("format_schema_path", f"{w}/format_schemas/"),
            ("log", f"{w}/server.log"),
            ("errorlog", f"{w}/server.err.log"),
            ("http_port", str(self.http_port)),
            ("tcp_port", str(self.tcp_port)),
            ("interserver_http_port", str(free_port())),
        ]:
            config = re.sub(rf"<{tag}>.*?</{tag}>", f"<{tag}>{value}</{tag}>", config, count=1, flags=re.S)
        if tls:
            self.https_port, self.tcp_secure_port = free_port(), free_port()
            self.ca_file = _make_certificates(w)
            config = re.sub(
                r"<!--\s*<https_port>.*?</tcp_port_secure>\s*-->",
                f"<https_port>{self.https_port}</https_port><tcp_port_secure>{self.tcp_secure_port}</tcp_port_secure>",
                config,
                flags=re.S,
            )
            config = config.replace("/etc/clickhouse-server/server.crt", f"{w}/server.crt")
            config = config.replace("/etc/clickhouse-server/server.key", f"{w}/server.key")
            config = re.sub(r"<dhParamsFile>.*?</dhParamsFile>", "", config)
        config = re.sub(r"<listen_host>::1?</listen_host>", "", config)
        config = re.sub(r"<listen_host>0\.0\.0\.0</listen_host>", "", config)
        config = re.sub(r"<level>\w+</level>", "<level>warning</level>", config, count=1)
        if "<listen_host>127.0.0.1</listen_host>" not in config:
            config = config.replace("<clickhouse>", "<clickhouse><listen_host>127.0.0.1</listen_host>", 1)
            config = config.replace("<yandex>", "<yandex><listen_host>127.0.0.1</listen_host>", 1)
        users = (LEGACY_CONFIG_DIR / "users.xml").read_text()
        if extra_users_xml:
            users = users.replace("</users>", extra_users_xml + "</users>", 1)
        (w / "users.xml").write_text(users)
        config = re.sub(r"<users_config>.*?</users_config>", f"<users_config>{w}/users.xml</users_config>", config)
        (w / "config.xml").write_text(config)
        self._start([LEGACY_BINARY, f"--config-file={w}/config.xml"], None)


class BinaryServer(_Server):
    """Any ``clickhouse`` build given as a binary (``--engines-from DIR``): the multi-call
    ``clickhouse`` (started as ``clickhouse server``) or a ``clickhouse-server``, with a
    minimal config of chbench's own — loopback only, data in a temp dir, query_log on —
    whose root element (``<yandex>``) every version from 18.x on reads."""

    def __init__(self, binary: str) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="chbench-binary-"))
        self.http_port, self.tcp_port = free_port(), free_port()
        w = self.workdir
        for sub in ("data", "tmp", "user_files", "format_schemas"):
            (w / sub).mkdir()
        (w / "users.xml").write_text(
            "<yandex><profiles><default></default></profiles><quotas><default></default></quotas>"
            "<users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>"
            "<profile>default</profile><quota>default</quota></default></users></yandex>")
        (w / "config.xml").write_text(
            "<yandex><logger><level>warning</level>"
            f"<log>{w}/server.log</log><errorlog>{w}/server.err.log</errorlog></logger>"
            f"<listen_host>127.0.0.1</listen_host><http_port>{self.http_port}</http_port>"
            f"<tcp_port>{self.tcp_port}</tcp_port><interserver_http_port>{free_port()}</interserver_http_port>"
            f"<path>{w}/data/</path><tmp_path>{w}/tmp/</tmp_path><user_files_path>{w}/user_files/</user_files_path>"
            f"<format_schema_path>{w}/format_schemas/</format_schema_path>"
            f"<users_config>{w}/users.xml</users_config><default_profile>default</default_profile>"
            "<default_database>default</default_database><mark_cache_size>536870912</mark_cache_size>"
            "<max_concurrent_queries>100</max_concurrent_queries>"
            "<query_log><database>system</database><table>query_log</table>"
            "<flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log></yandex>")
        argv = [binary, "server"] if Path(binary).name == "clickhouse" else [binary]
        self._start([*argv, f"--config-file={w}/config.xml"], None)
