"""The shape of the code, as docs/architecture.md promises it: layers import downwards
only, nothing outside targets/ knows a target by its kind, functions stay short."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "chbench"
LOWER = ("targets", "stats", "results")
UPPER = ("commands", "clickbench", "load", "transfer", "report")
SQL_TEMPLATES = {("clickbench/synthetic.py", "select_sql")}  # one generated column per line
MAX_LINES = 80


def _modules() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py")]


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
