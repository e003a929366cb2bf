"""The shape of the code, as docs/architecture.md promises it: layers import downwards
only, nothing outside targets/ knows a target by its kind, functions stay short."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "chbench"
LOWER = ("targets", "stats", "results")
UPPER = ("commands", "clickbench", "load", "transfer", "report")
SQL_TEMPLATES = {("clickbench/synthetic.py", "select_sql")}  # one generated column per line
MAX_LINES = 80


@functools.cache  # parsed once for every test (each parse of the package took 1-2 s)
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((str(p.relative_to(PACKAGE)), ast.parse(p.read_text(encoding="utf-8")))
                 for p in PACKAGE.rglob("*.py"))


def _imported(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_lower_layers_do_not_import_upper_ones():
    bad = []
    for path, tree in _modules():
        if path.split("/")[0] in LOWER:
            bad += [f"{path} imports {m}" for m in _imported(tree)
                    if any(m == f"chbench.{u}" or m.startswith(f"chbench.{u}.") for u in UPPER)]
    assert bad == []


def test_only_targets_name_the_embedded_kind():
    """``grep -rn '"embedded"' chbench/ | grep -v '^chbench/targets/'`` prints nothing."""
    bad = []
    for path in PACKAGE.rglob("*"):
        rel = str(path.relative_to(PACKAGE))
        if path.is_file() and not rel.startswith("targets/") and b'"embedded"' in path.read_bytes():
            bad.append(rel)
    assert bad == []


def test_functions_are_short():
    long = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (path, node.name) not in SQL_TEMPLATES:
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_LINES:
                    long.append(f"{path}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_every_command_is_listed_once_and_thin():
    from chbench.commands import COMMANDS
    from chbench.commands.clickbench import SUBCOMMANDS

    modules = {p.stem for p in (PACKAGE / "commands").glob("*.py")} - {"__init__", "args", "connection",
                                                                          "transfer_args"}
    assert modules | {"clickbench"} == set(COMMANDS)
    assert {p.stem for p in (PACKAGE / "commands" / "clickbench").glob("*.py")} - {"__init__"} == set(SUBCOMMANDS)


def test_locust_is_imported_only_where_gevent_is_meant_to_be():
    """Importing locust monkey-patches a process with gevent: only the master/worker code
    paths (imported by those processes alone) and the Locust user module may import it,
    and no test module (it would patch the pytest process)."""
    allowed = {"distributed/__init__.py", "distributed/master.py", "distributed/worker.py", "locust.py"}
    importers = set()
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if any(n == "locust" or n.startswith("locust.") for n in names):
                importers.add(path)
    assert importers <= allowed, importers - allowed
    for test in Path(__file__).parent.glob("test_*.py"):
        tree = ast.parse(test.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] == "locust" or m == "chbench.locust" for m in mods), test.name


def test_verdicts_travel_in_types():
    """The comparison's rows are ``stats/verdict.py``'s dataclasses: no module of the
    package writes a verdict into a dict (``["verdict"] = …``), and ``stats/`` does not
    reach up into ``compare/`` (which builds documents from files)."""
    bad = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) \
                            and t.slice.value == "verdict":
                        bad.append(f"{path}:{node.lineno}")
        if path.startswith("stats/"):
            bad += [f"{path} imports {m}" for m in _imported(tree) if m.startswith("chbench.compare")]
    assert bad == []


def test_history_knows_no_command_and_no_output():
    """history/ (stores, series, change points) is library code: commands/ and report/ call it."""
    bad = []
    for path, tree in _modules():
        if path.startswith("history/"):
            bad += [f"{path} imports {m}" for m in _imported(tree)
                    if m.startswith(("chbench.commands", "chbench.report", "chbench.export"))]
    assert bad == []


def test_one_place_turns_an_ending_into_a_status_and_an_exit_code():
    """``chbench/outcome.py`` alone pairs a file's status with an exit code: no other
    module names the exit codes of a stop or the status of a lost server."""
    bad = []
    for path, tree in _modules():
        if path in ("errors.py", "outcome.py"):
            continue
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        bad += [f"{path} names {x}" for x in ("EXIT_SERVER_LOST", "EXIT_INTERRUPTED") if x in names]
        if path != "results/document.py":  # the list of statuses a file may hold
            bad += [f"{path} spells 'server_lost'" for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and n.value == "server_lost"]
    assert bad == []


def test_every_results_writer_is_a_context_manager():
    """Whatever ends a command, its file is finished: each ``ResultsWriter(...)`` is a
    ``with`` item, or bound to a name that a ``with`` of the same module enters."""
    bad = []
    for path, tree in _modules():
        entered = {ast.unparse(item.context_expr) for n in ast.walk(tree) if isinstance(n, ast.With | ast.AsyncWith)
                   for item in n.items}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func) == "ResultsWriter"
                    and not any(ast.unparse(t) in entered for t in node.targets)):
                bad.append(f"{path}:{node.lineno}")
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "ResultsWriter"]
        assigned = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)]
        bad += [f"{path}:{c.lineno} neither entered nor bound" for c in calls
                if ast.unparse(c) not in entered and c not in assigned]
    assert bad == []


# the capabilities and what each may not import (docs/architecture.md's table)
CAPABILITY_RULES = {
    "core": ("load", "replay", "clickbench", "distributed", "transfer", "runner", "results", "ui", "commands"),
    "load": ("clickbench", "replay", "transfer", "distributed", "commands"),
    "clickbench": ("replay", "transfer", "distributed", "commands"),
    "transfer": ("load", "clickbench", "replay", "distributed", "runner", "commands"),
    "replay": ("load", "transfer", "distributed", "commands"),
    "export": ("load", "clickbench", "replay", "transfer", "commands", "runner"),
}


def test_capabilities_know_only_what_the_document_says():
    bad = []
    for path, tree in _modules():
        top = path.split("/")[0]
        for m in _imported(tree):
            parts = m.split(".")
            if parts[0] == "chbench" and len(parts) > 1 and parts[1] in CAPABILITY_RULES.get(top, ()):
                bad.append(f"{path} imports {m}")
    assert bad == []


def test_one_class_per_name():
    """One meaning per name: two public classes never share one (``Plan``, ``Side``,
    ``Step``, … each name one thing; the replay's own are ``ReplayPlan``, ``ReplaySide``)."""
    where: dict[str, list[str]] = {}
    for path, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(path)
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_one_meaning_per_word_in_module_names():
    """`session` is the runner's --sessions and chDB's session, never a module (a command
    from plan to file is its ``driver.py``); `engine` is a ClickHouse build (engines/,
    targets/); `worker` is a Locust worker (distributed/) or a --workers process."""
    bad = []
    for p in PACKAGE.rglob("*.py"):
        rel = str(p.relative_to(PACKAGE))
        if p.stem == "session" or ("engine" in p.stem and rel.split("/")[0] not in ("engines", "targets", "commands")) \
                or (p.stem == "worker" and rel != "distributed/worker.py"):
            bad.append(rel)
    assert bad == []


QUEUES = ("load/", "distributed/")  # where processes talk over queues


def test_messages_cross_boundaries_only_as_messages_types():
    """Process and network messages are ``chbench/messages.py``'s dataclasses: no Locust
    message kind spelled as a string, no JSON line tagged by hand, no queue item tagged by a
    string (``("done", worker, …)``)."""
    bad = []
    for path, tree in _modules():
        if path == "messages.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                first = node.args[0]
                if node.func.attr in ("send_message", "register_message") and isinstance(first, ast.Constant):
                    bad.append(f"{path}:{node.lineno} {node.func.attr}({first.value!r})")
                if node.func.attr == "put" and isinstance(first, ast.Tuple) and first.elts \
                        and isinstance(first.elts[0], ast.Constant) and path.startswith(QUEUES):
                    bad.append(f"{path}:{node.lineno} put((…))")
            tagged = isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "type"
                                                        for k in node.keys)
            if tagged and path.startswith("distributed/"):
                bad.append(f"{path}:{node.lineno} a message tagged by hand")
    assert bad == []


def test_the_runner_reports_through_its_observers():
    """``runner/`` tells what happens through ``observer.py``'s protocol; the display
    (``ui/``) and upgrade's checks subscribe to it, the runner imports neither."""
    bad = [f"{path} imports {m}" for path, tree in _modules() if path.startswith("runner/")
           for m in _imported(tree) if m.startswith(("chbench.ui", "chbench.upgrade"))]
    assert bad == []


# the places that time a query they send: the core (its lanes: every load level, capacity
# step, stress phase, --workers process, lane host and replay; its one sequential send:
# ``run``'s rounds, ClickBench's runner), transfer's timed send of each client path, and
# the Locust user class whose requests Locust itself times
TIMED_SENDERS = ("core/", "transfer/", "targets/", "locust.py")


def test_no_module_outside_the_core_sends_a_timed_query():
    """A function that sends a query on a target (``.execute(``) and reads a clock around
    it lives in one of ``TIMED_SENDERS`` (transfer/ times client paths, not queries; the
    targets time themselves), and ``run``'s rounds send through the core."""
    clocks = {"monotonic", "perf_counter", "time_ns", "perf_counter_ns"}
    bad = []
    for path, tree in _modules():
        if path.startswith(TIMED_SENDERS):
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                calls = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call)
                         and isinstance(n.func, ast.Attribute)}
                if "execute" in calls and calls & clocks:
                    bad.append(f"{path}:{fn.lineno} {fn.name}")
    assert bad == []


def _layout_rows() -> dict[str, str]:
    """docs/architecture.md's table: the first cell's folders and modules -> the row."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = {}
    for line in doc.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            for name in re.findall(r"`([^`]+)`", first):
                rows[name] = line
    return rows


def test_the_documented_layout_is_the_code():
    """Every package of chbench/ has a row in docs/architecture.md's table, every row names
    folders and modules that exist, and every module a row names inside its folder exists."""
    rows = _layout_rows()
    packages = {f"{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages - set(rows) == set(), "packages without a row"
    bad = []
    for name, line in rows.items():
        if not (PACKAGE / name.rstrip("/")).exists():
            bad.append(f"row {name}: no such folder or module")
        if name.endswith("/"):
            cells = line.split("|")[2]
            for mod in re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", cells):
                repo = PACKAGE.parent
                places = (PACKAGE / mod, PACKAGE / name / mod, repo / mod, repo / "tests" / mod)
                found = any(p.exists() for p in places) or bool(list((PACKAGE / name).rglob(mod)))
                if not found:
                    bad.append(f"row {name}: {mod} is not in it")
    assert bad == []


def test_one_observer_protocol():
    """Whoever watches a run's rounds or a load level subscribes to ``observer.py``'s
    ``Observer``: no other module defines an observer protocol of its own."""
    bad = [f"{path}: {node.name}" for path, tree in _modules() if path != "observer.py" for node in tree.body
           if isinstance(node, ast.ClassDef) and node.name.rstrip("s").endswith("Observer")]
    assert bad == []


def test_observers_never_see_the_runner():
    """An observer of a run gets ``observer.FinishedRounds`` when its rounds are done, not
    the ``Runner``: nothing outside ``runner/`` names it (it is the old ``after(runner)``
    hook, through which a check reached into the runner's writer)."""
    bad = [f"{path} imports Runner" for path, tree in _modules() if not path.startswith("runner/")
           for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "chbench.runner.runner"
           for alias in node.names if alias.name == "Runner"]
    assert bad == []
