"""``chbench engines``: real ClickHouse versions on demand (list, install, remove, path)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from chbench.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from chbench.engines.store import Engine, EngineStore

NAME = "engines"
HELP = "ClickHouse versions on demand: list, install, remove, path"
DESCRIPTION = ("Every chDB release bundles a whole ClickHouse: chbench installs the one a version needs into a "
               "directory of its own (--engines-dir, $CHBENCH_ENGINES_DIR, else ~/.cache/chbench/engines), "
               "checks it answers SELECT version() as the catalog says, and runs it as embedded@VERSION (or "
               "server@VERSION where the build can listen). VERSION is 24.8 (the newest build of that line), "
               "24.8.4.1 (exact) or latest.")
EPILOG = """\
examples:
  chbench engines list
  chbench engines install 24.8 25.8
  chbench run --target embedded@24.8 --target embedded@26.9
  chbench engines path 24.8
  chbench engines remove 24.8
"""
ACTIONS = ("list", "install", "remove", "path")


def add_engines_dir(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--engines-dir", metavar="DIR",
                   help="where engines are installed (default: $CHBENCH_ENGINES_DIR, else "
                        "$XDG_CACHE_HOME/chbench/engines)")


def use_engines_dir(args: argparse.Namespace) -> None:
    """--engines-dir for this command and every process it starts (targets read it there)."""
    if getattr(args, "engines_dir", None):
        from chbench.engines.store import ENV_DIR

        os.environ[ENV_DIR] = str(args.engines_dir)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=ACTIONS, metavar="ACTION", help="list | install | remove | path")
    p.add_argument("versions", nargs="*", metavar="VERSION")
    p.add_argument("--all", action="store_true", help="list: every release in the catalog, not one per version")
    p.add_argument("--format", choices=("console", "json"), default="console")
    add_engines_dir(p)


def run(args: argparse.Namespace) -> int:
    from chbench.engines.store import EngineStore

    use_engines_dir(args)
    store = EngineStore()
    if args.action == "list":
        if args.versions:
            raise UsageError("engines list takes no versions")
        return _list(store, args)
    if not args.versions:
        raise UsageError(f"engines {args.action} needs at least one VERSION (24.8, 24.8.4.1 or latest)")
    releases = [store.catalog.resolve(v) for v in args.versions]  # every spelling checked before any work
    if args.action == "path" and len(releases) != 1:
        raise UsageError("engines path takes one VERSION")
    for release in releases:
        if args.action == "install":
            engine = store.find(release)
            if engine is not None:
                print(f"ClickHouse {release.clickhouse}: installed already ({_where(engine)})")
                continue
            engine = store.install(release)
            print(f"ClickHouse {release.clickhouse}: installed, {engine.bytes / 1e6:.0f} MB ({_where(engine)})")
        elif args.action == "remove":
            freed = store.remove(release)
            print(f"ClickHouse {release.clickhouse}: removed ({freed / 1e6:.0f} MB freed)")
        else:
            engine = store.find(release)
            if engine is None:
                raise UsageError(f"ClickHouse {release.clickhouse} is not installed (chbench engines install "
                                 f"{release.line})")
            print(engine.site or _own_site(release.package))
    return EXIT_OK


def _where(engine: Engine) -> str:
    return engine.site or "chbench's own chDB"


def _own_site(package: str) -> str:
    from importlib import metadata

    dist = metadata.distribution(package)
    return str(dist.locate_file(""))


def _list(store: EngineStore, args: argparse.Namespace) -> int:
    import json

    store.clean_partial()
    installed = store.installed()
    releases = list(store.catalog.releases) if args.all else store.catalog.engines()
    py = (sys.version_info[0], sys.version_info[1])
    rows: list[dict[str, Any]] = []
    for r in releases:
        engine = installed.get(r.clickhouse)
        here = engine is not None and engine.release == r
        rows.append({"clickhouse": r.clickhouse, "line": r.line, "package": r.package, "version": r.version,
                     "installed": here, "own": bool(here and engine and engine.own),
                     "bytes": engine.bytes if here and engine else None, "sessions": r.api == "connect",
                     "server": r.listens, "python_ok": r.supports(py), "python": r.pythons()})
    if args.format == "json":
        print(json.dumps({"engines_dir": str(store.root), "engines": rows}, indent=1))
        return EXIT_OK
    from chbench.export.console import ConsoleExporter
    from chbench.export.sections import Column, Report, Section, Table

    table = Table([Column("version", align="left"), Column("release", align="left"),
                   Column("installed", align="left"), Column("disk"), Column("server@", align="left"),
                   Column("this Python", align="left")], filterable=False)
    for row in rows:
        table.add(row["clickhouse"], f"{row['package']} {row['version']}",
                  "yes (chbench's own)" if row["own"] else "yes" if row["installed"] else "",
                  f"{row['bytes'] / 1e6:.0f} MB" if row["bytes"] else "",
                  "yes" if row["server"] else "", "yes" if row["python_ok"] else f"no ({row['python']})")
    title = f"ClickHouse engines (installed in {store.root})"
    sys.stdout.write(ConsoleExporter().render(Report("", [Section(title, "engines", [table])])))
    used = sum(e.bytes for e in installed.values() if not e.own)
    print(f"{sum(1 for r in rows if r['installed'])} installed, {used / 1e6:.0f} MB in {store.root}; "
          "catalog: chbench/engines/catalog.json (scripts/engine_catalog.py)")
    return EXIT_OK
