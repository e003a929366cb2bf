"""The docs cannot drift (issue 28, part 5): every command shown in README.md and docs/
runs here.

* A ``console`` block is an example: its ``$`` lines run in order, in one fresh directory
  per page (a later command reads what an earlier one wrote), against the embedded engine
  and a fresh 26.9 server that stands in for ``localhost:8123`` (HTTP) and ``:9000``
  (native). Each command runs as written, made smaller by ``SHORTEN`` only (fewer
  iterations, fewer rows, shorter phases: sizes the shape of the output does not depend
  on). It must end 0 or 1 (1 is a finding: slower, a changed answer), print no traceback,
  and print the shape the page shows: every ``Label:`` the page shows, every table
  header cell, and every line without a number (a heading, a fixed message).
* Any other block or inline code that names a command (``chbench SUB …``) is a synopsis:
  the command must exist and every ``--flag`` it names must be one of its options.
* No other block holds a ``$ `` line: an example that is not run cannot be shown as one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chbench.servers import ModernServer
from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)

# The same commands, smaller. Each rewrite changes a size, never what is measured or how:
# a page's example took minutes at full size, the suite has ~15 minutes for everything.
SHORTEN: list[tuple[str, str]] = [
    (r"--iterations \d+", "--iterations 10"),  # 10 paired rounds can decide (3 never can: p >= 0.25)
    (r"--synthetic \d+", "--synthetic 20000"),
    (r"--rows \d+", "--rows 20000"),
    (r"(\s)-t \d+", r"\1-t 2"),
    (r"(\s)-i \d+", r"\1-i 120"),
    (r"--duration \d+", "--duration 3"),
    (r"--step-duration \d+", "--step-duration 2"),
    (r"--rate 600\b", "--rate 150"),
    (r"numbers\(10000000\)", "numbers(1000000)"),
    # the page's capture held only the load just before it; the shortened steps run closer
    # together, and a minute reached back to the 20M-row queries of the run before (the
    # replay of them took 10 s of the README's 86)
    (r"--since 1m\b", "--since 20s"),
]
BUILTIN_SUITE = ("run", "upgrade", "trend")  # these default to the built-in suite: --scale shrinks its rows


def shorten(command: str) -> str:
    # a page's own comment ends the line: what is added goes before it (appended after it,
    # compare.md's "--out after.json  # the neighbour busy meanwhile" ran at full size)
    comment = ""
    if (m := re.search(r"\s+#\s.*$", command)) and command[: m.start()].count("'") % 2 == 0:
        command, comment = command[: m.start()], command[m.start():]
    for pattern, replacement in SHORTEN:
        command = re.sub(pattern, replacement, command)
    words = command.split()
    if len(words) > 1 and words[0] == "chbench" and words[1] in BUILTIN_SUITE:
        if not {"--queries", "--query", "--tests", "--scale"} & set(words):
            command += " --scale 0.01"  # and side B's scale too, so B/A stays what the page says
            command = re.sub(r"--scale-b ([\d.]+)", lambda m: f"--scale-b {float(m.group(1)) / 100:g}", command)
        if "--iterations" not in words:
            command += " --iterations 3"
    if len(words) > 1 and words[:2] == ["chbench", "ingest"] and "--rows" not in words:
        command += " --rows 20000"  # its default, 1,000,000 rows through every path, took 15 s of the page's 100
    if "--slo" in words and "--max-time" not in words:
        command += " --max-time 25"  # a capacity search within its budget (the default is 10 minutes)
    return command + comment


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)

    @property
    def background(self) -> bool:
        return self.command.rstrip().endswith(("&", "& done"))


def console_steps(text: str) -> Iterator[Step]:
    for lang, body in FENCE.findall(text):
        if lang != "console":
            continue
        step: Step | None = None
        lines = iter(body.splitlines())
        for line in lines:
            if line.startswith("$ "):
                if step:
                    yield step
                command = line[2:]
                while command.endswith("\\"):
                    command = command[:-1] + " " + next(lines).strip()
                step = Step(command)
            elif step:
                step.shown.append(line)
        if step:
            yield step


LABEL = re.compile(r"^([A-Za-z][A-Za-z /()'.-]{0,48}?):(\s|$)")
DIGIT = re.compile(r"\d")


def shape(lines: list[str]) -> tuple[set[str], set[str], set[str]]:
    """Labels (``Verdicts:``), table header cells, and the lines that hold no number."""
    labels, headers, fixed = set(), set(), set()
    varying = False  # inside a finding or a note, wrapped over lines: what it says depends on the run
    for i, raw in enumerate(lines):
        line = " ".join(raw.split())
        if line.startswith(("Finding", "Note", "Why", "chbench: warning")):
            varying = True
            continue
        if varying and line and not LABEL.match(line) and line[0] not in "┃│|┏┡└┗━─$":
            continue
        varying = False
        if not line or "…" in line:
            continue
        if line.startswith("┃"):
            headers |= {c.strip() for c in line.strip("┃").split("┃") if c.strip()}
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            headers |= {c.strip() for c in line.strip("|").split("|") if c.strip()}
        elif line[0] in "│|┏┡└┗━─":
            continue
        elif (m := LABEL.match(line)) and not DIGIT.search(m.group(1)):
            labels.add(m.group(1))
        elif not DIGIT.search(line):
            fixed.add(line)
    return labels, headers, fixed


def check_shape(step: Step, output: str) -> None:
    want, got = shape(step.shown), shape(output.splitlines())
    missing = [sorted(w - g) for w, g in zip(want[:2], got[:2], strict=True)]
    # a fixed line may go on where the page's run said more (the shortened run's label: ", scale=0.01")
    lines = [" ".join(line.replace(", scale=0.01", "").split()) for line in output.splitlines()]  # SHORTEN's own
    missing.append(sorted(f for f in want[2] if not any(line.startswith(f) for line in lines)))
    assert missing == [[], [], []], (step.command, "labels, header cells, fixed lines not in the output", missing,
                                     output[-3000:])


@pytest.fixture(scope="module")
def docs_server() -> Iterator[ModernServer]:
    """A server of its own: capture reads its query_log, which holds only the pages' queries."""
    server = ModernServer()
    yield server
    server.stop()


def on_server(command: str, server: ModernServer) -> str:
    command = command.replace("localhost:8123", f"localhost:{server.http_port}")
    command = command.replace("localhost:9000", f"localhost:{server.tcp_port}")
    return re.sub(r"--port 9000\b", f"--port {server.tcp_port}", command)


PAGES_VERSIONS = ("24.8",)  # the catalog versions the pages' examples name (26.9 is chbench's own)


def pages_engines(work: Path) -> tuple[Path, Path]:
    """The engine cache, and a directory holding only the pages' versions (linked from
    it): what else a machine has installed changes the pages' output (``bisect
    --installed`` walks every installed version in its range)."""
    from chbench.engines.store import engines_dir

    cache, engines = engines_dir(), work / "engines"
    engines.mkdir()
    for version in PAGES_VERSIONS:
        have = sorted(cache.glob(f"{version}.*"))
        if not have:  # installed once into the cache, as any other test would, then linked
            p = subprocess.run([sys.executable, "-m", "chbench", "engines", "install", version],
                               capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, p.stderr
            have = sorted(cache.glob(f"{version}.*"))
        for path in have:
            (engines / path.name).symlink_to(path, target_is_directory=True)
    return cache, engines


def run_page(page: Path, server: ModernServer, work: Path) -> list[str]:
    """Every example of a page, in order; what went wrong, one line each."""
    (work / "bench").symlink_to(REPO / "bench")
    cache, engines = pages_engines(work)
    env = dict(os.environ, COLUMNS="250", XDG_DATA_HOME=str(work / "data"), CHBENCH_ENGINES_DIR=str(engines),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("CLICKHOUSE_PASSWORD", None)
    background: list[subprocess.Popen[bytes]] = []
    problems = []
    try:
        for step in console_steps(page.read_text()):
            command = on_server(shorten(step.command), server)
            if step.background:
                background.append(subprocess.Popen(["bash", "-c", command], cwd=work, env=env,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                   start_new_session=True))
                continue
            p = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                               timeout=400)
            output = (p.stdout + p.stderr).replace(str(engines), str(cache))  # as the page names the cache
            if p.returncode not in (0, 1) or "Traceback" in output:
                problems.append(f"{step.command!r} ended {p.returncode}: {output[-2000:]}")
                continue
            try:
                check_shape(step, output)
            except AssertionError as e:
                problems.append(f"{e}\n--- its output:\n{output[-1500:]}")
    finally:
        for proc in background:  # the shell, and what it left running in its process group
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                problems.append(f"a background command of {page.name} was still running")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    return problems


EXAMPLE_PAGES = [p for p in PAGES if any(True for _ in console_steps(p.read_text()))]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=[p.name for p in EXAMPLE_PAGES])
def test_every_example_runs_and_prints_what_the_page_shows(page, docs_server, tmp_path):
    assert run_page(page, docs_server, tmp_path) == []


def test_the_readme_and_the_docs_have_examples():
    assert REPO / "README.md" in EXAMPLE_PAGES
    assert sum(1 for _ in console_steps((REPO / "README.md").read_text())) >= 20


def test_the_shape_check_catches_drift():
    step = Step("chbench compare x.json", ["Verdicts: 1 slower", "┃ query ┃ verdict ┃", "A: embedded"])
    check_shape(step, "Verdicts: 2 faster\n┃ query   ┃ verdict ┃ extra ┃\nA: embedded\n")
    with pytest.raises(AssertionError):
        check_shape(step, "Verdict: 1 slower\n┃ query ┃ verdict ┃\nA: embedded\n")  # a label renamed
    with pytest.raises(AssertionError):
        check_shape(step, "Verdicts: 1 slower\n┃ query ┃ result ┃\nA: embedded\n")  # a column renamed
    with pytest.raises(AssertionError):
        check_shape(step, "Verdicts: 1 slower\n┃ query ┃ verdict ┃\nB: embedded\n")  # a fixed line changed
    wrapped = Step("x", ["Finding: 144 runs set aside, not", "in the verdicts", "Verdicts: 1 slower"])
    check_shape(wrapped, "Finding: 2 queries unstable\nVerdicts: 1 slower\n")  # a finding is the run's own


def test_shorten_changes_sizes_only():
    assert shorten("chbench run --out before.json") == "chbench run --out before.json --scale 0.01 --iterations 3"
    assert shorten("chbench run --queries q.sql --iterations 15") == "chbench run --queries q.sql --iterations 10"
    assert shorten("chbench run --scale-b 1.1 --iterations 15") == \
        "chbench run --scale-b 0.011 --iterations 10 --scale 0.01"
    assert shorten("chbench load -q 'SELECT 1' --slo 'p99<=1ms'").endswith("--max-time 25")
    assert shorten("chbench ingest --target x --format markdown").endswith("--rows 20000")
    assert shorten("chbench run --out after.json   # a neighbour busy") == \
        "chbench run --out after.json --scale 0.01 --iterations 3   # a neighbour busy"
    assert shorten("chbench run --query 'SELECT 1 # x' --out a.json").endswith("--out a.json --iterations 3")


# --- synopses: every command named anywhere must exist with the flags it names ----------

CODE = re.compile(r"```\w*[^\n]*\n(.*?)^```|`([^`\n]+)`", re.M | re.S)
NOT_RUN = re.compile(r"^```(?!console)\w*[^\n]*\n(.*?)^```", re.M | re.S)


def commands_named(text: str) -> Iterator[str]:
    without_examples = FENCE.sub(lambda m: "" if m.group(1) == "console" else m.group(0), text)
    for block, inline in CODE.findall(without_examples):
        for line in (block or inline).splitlines():
            line = re.split(r"\s{3,}|\s#\s", line.strip())[0]  # a synopsis's comment after the command
            for m in re.finditer(r"(?:^|[|&;]\s*)(chbench (?:[a-z][\w-]*)(?: [^#|&;]*)?)", line):
                yield m.group(1)


def parser_for(words: list[str]) -> tuple[argparse.ArgumentParser, object]:
    """The (sub)command's own parser, walked down the tree of subparsers, and its module."""
    from chbench.cli import build_parser

    parser: argparse.ArgumentParser = build_parser()
    for word in words:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        parser = sub.choices[word]
    return parser, parser.get_default("_command")


def test_every_command_named_exists_with_its_flags():
    from chbench.commands import COMMANDS

    problems = []
    for page in PAGES:
        for named in commands_named(page.read_text()):
            try:
                words = shlex.split(named.replace("…", " ").replace("[", " ").replace("]", " "))[1:]
            except ValueError:
                words = named.split()[1:]
            if not words or words[0] not in COMMANDS:
                if words and re.fullmatch(r"[a-z][a-z-]+", words[0]) and words[0] not in ("is", "as"):
                    problems.append(f"{page.name}: unknown command {named!r}")
                continue
            parser, module = parser_for(words)
            known = set(parser._option_string_actions)
            for word in words:
                flag = word.split("=")[0]
                if not flag.startswith("-") or flag in ("-", "--") or flag in known:
                    continue
                if getattr(module, "settings_from", None) and "_" in flag:
                    continue  # load takes ClickHouse settings as flags
                problems.append(f"{page.name}: {flag} is not an option of {named!r}")
    assert problems == []


def test_no_page_shows_a_command_that_is_not_run():
    shown = [f"{p.name}: {line}" for p in PAGES for body in NOT_RUN.findall(p.read_text())
             for line in body.splitlines() if line.startswith("$ ")]
    assert shown == []
