"""Fixtures: real engines only — the 26.9 server from the chDB wheel, the Debian 18.16
server, and the embedded chDB engine (used in-process and through the CLI)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engines import LegacyServer, ModernServer

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-Pa55"
EXTRA_USER = (
    f"<bench><password>{PASSWORD}</password><networks><ip>::/0</ip></networks>"
    "<profile>default</profile><quota>default</quota></bench>"
)


@pytest.fixture(scope="session")
def modern() -> Iterator[ModernServer]:
    server = ModernServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def legacy() -> Iterator[LegacyServer]:
    server = LegacyServer(extra_users_xml=EXTRA_USER)
    yield server
    server.stop()


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


# Commands that only read results files and write reports or a history store run in this
# process: a fresh interpreter and its imports (scipy.stats: 0.9-2 s, which compare,
# report and history check need) cost more than the command. Measured 2026-12-04: 119
# such calls took 190 s of the suite's 1,235 s (1.6 s each). Every other command — one
# that runs queries, starts engines, handles signals or writes to /dev/stdout — gets a
# fresh process, as a user would start it.
IN_PROCESS = {("compare",), ("report",), ("explain",), ("history",), ("clickbench", "compare")}


def _in_process(args: tuple[str, ...]) -> bool:
    return (args[:1] in IN_PROCESS or args[:2] in IN_PROCESS) and not any(a.startswith("/dev/") for a in args)


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 240) -> Result:
    """Run the real command line as a user would: in a fresh process (in this one for
    the file-only commands of ``IN_PROCESS``: the same ``main``, its exit code, stdout and
    stderr, a traceback printed as the interpreter would)."""
    if _in_process(args):
        return _run_here(args, stdin, env)
    full_env = dict(os.environ)
    full_env.pop("CLICKHOUSE_PASSWORD", None)
    full_env.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "chbench", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=REPO,
    )
    return Result(p.returncode, p.stdout, p.stderr)


def _run_here(args: tuple[str, ...], stdin: str | None, env: dict[str, str] | None) -> Result:
    from chbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    os.environ.pop("CLICKHOUSE_PASSWORD", None)
    os.environ.update(env or {})
    sys.stdin = io.StringIO(stdin or "")
    try:
        os.chdir(REPO)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse: a usage error, --help
                code = e.code if isinstance(e.code, int) else int(e.code is not None)
            except Exception:  # noqa: BLE001 - what an uncaught error prints, and its exit code
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.stdin = saved_stdin
    return Result(code, out.getvalue(), err.getvalue())


def _sigint_default() -> None:
    """In the child, before exec: Ctrl-C does what it does in a terminal. A parent that
    ignores SIGINT (a background job of a non-interactive shell, as some CI runners start
    the tests) would otherwise hand that down, and the child would never see Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_cli(*args: str) -> subprocess.Popen[str]:
    """The real command line in the background (for Ctrl-C and dead-server tests)."""
    return subprocess.Popen([sys.executable, "-m", "chbench", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)


def interrupt(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """Ctrl-C the child; its stderr once it has finished."""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=timeout)
    return err


def assert_interrupted(path: Path) -> Any:
    """A results file left by Ctrl-C: valid, finished as interrupted, with its end time."""
    doc = load(path)
    assert doc["status"] == "interrupted", doc["status"]
    assert doc["meta"]["ended_at"], doc["meta"]
    return doc


def wait_for_results(out: Path, proc: subprocess.Popen[str], ready: Callable[[Any], bool],
                     timeout: float = 60) -> None:
    """Until the results file ``out`` (rewritten atomically as the run goes) satisfies ``ready``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if ready(load(out)):
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{out} never became ready")


def load(path: Path | str) -> Any:
    return json.loads(Path(path).read_text())


def assert_one_line_error(r: Result, code: int = 2) -> None:
    assert r.code == code, (r.code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("chbench: warning:")]
    assert len(lines) == 1 and lines[0].startswith("chbench: error:"), r.stderr


@pytest.fixture(scope="session")
def old_engine() -> str:
    """ClickHouse 24.8 installed in the user's engine cache (kept between test runs): the
    one engine besides chbench's own that the tests install."""
    from chbench.engines.store import EngineStore, engines_dir

    engine = EngineStore(engines_dir()).ensure("24.8", progress=False)
    assert engine.release.clickhouse.startswith("24.8.")
    return engine.release.clickhouse
