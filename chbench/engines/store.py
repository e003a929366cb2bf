"""Installed engines: one directory each under the engines directory.

Where: ``--engines-dir``, else ``$CHBENCH_ENGINES_DIR``, else
``$XDG_CACHE_HOME/chbench/engines`` (``~/.cache/chbench/engines``). Each engine is
``<dir>/<clickhouse version>/`` with ``site/`` (the release, installed alone by pip with
``--no-deps --target``: its dependencies — pyarrow, pandas — are chbench's own) and
``engine.json`` (what was installed, when, how big). pip's own download cache is used, so
a second machine user or a reinstall downloads nothing.

An install is written to ``.partial-<version>-<pid>/`` and renamed into place only after
the engine answered ``SELECT version()`` with the catalog's version: a half-finished
install (Ctrl-C, a full disk, a lost network) never counts as installed, and its leftovers
are removed by the next install or ``engines list``.

The engine of chbench's own chDB (the default ``embedded`` target) is installed already:
``embedded@26.9`` uses it in a worker process without a second copy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from chbench.engines.catalog import Catalog, Release, load_catalog
from chbench.engines.process import EngineLost, WorkerProcess
from chbench.errors import ChbenchError, UsageError

ENV_DIR = "CHBENCH_ENGINES_DIR"


class InstallFailed(ChbenchError):
    """An engine could not be installed or did not verify."""


def engines_dir(override: str | None = None) -> Path:
    if override:
        return Path(override).expanduser()
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "chbench" / "engines"


@dataclass(frozen=True)
class Engine:
    """An installed engine: where its release lives (None: chbench's own environment)."""

    release: Release
    site: str | None
    bytes: int

    @property
    def own(self) -> bool:
        return self.site is None


def own_release(catalog: Catalog) -> Release | None:
    """The catalog line of the chDB chbench itself runs (read from package metadata: no
    import of chDB, which would start its engine in this process)."""
    for package in ("chdb-core", "chdb"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            r = catalog.for_package(package, metadata.version(package))
            if r is not None:
                return r
    return None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


class EngineStore:
    def __init__(self, root: Path | None = None, catalog: Catalog | None = None) -> None:
        self.root = root or engines_dir()
        self.catalog = catalog or load_catalog()

    def installed(self) -> dict[str, Engine]:
        """ClickHouse version → installed engine (complete installs only)."""
        out: dict[str, Engine] = {}
        own = own_release(self.catalog)
        if own is not None:
            out[own.clickhouse] = Engine(own, None, own.installed_bytes or 0)
        if self.root.is_dir():
            for d in sorted(self.root.iterdir()):
                info = d / "engine.json"
                if d.name.startswith(".") or not info.is_file():
                    continue
                with contextlib.suppress(OSError, ValueError, KeyError):
                    meta = json.loads(info.read_text())
                    release = self.catalog.for_package(meta["package"], meta["version"])
                    if release is not None and release.clickhouse not in out:
                        out[release.clickhouse] = Engine(release, str(d / "site"), int(meta.get("bytes", 0)))
        return out

    def find(self, release: Release) -> Engine | None:
        return self.installed().get(release.clickhouse)

    def ensure(self, spec: str, progress: bool = True) -> Engine:
        """The engine ``spec`` names, installed first if it is not (one line on stderr)."""
        release = self.catalog.resolve(spec)
        return self.find(release) or self.install(release, progress)

    def install(self, release: Release, progress: bool = True) -> Engine:
        self.clean_partial()
        final = self.root / release.clickhouse
        tmp = self.root / f".partial-{release.clickhouse}-{os.getpid()}"
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        size_mb = f", ~{release.installed_bytes / 1e6:.0f} MB" if release.installed_bytes else ""
        print(f"installing ClickHouse {release.clickhouse} ({release.requirement}{size_mb}) into {final}",
              file=sys.stderr, flush=True)
        try:
            self._pip(release, tmp / "site", progress)
            self._verify(release, tmp / "site")
            size = _size(tmp / "site")
            (tmp / "engine.json").write_text(json.dumps({
                "clickhouse": release.clickhouse, "package": release.package, "version": release.version,
                "installed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "python": f"{sys.version_info[0]}.{sys.version_info[1]}", "bytes": size}, indent=1) + "\n")
            if final.exists():  # installed meanwhile by another chbench: keep that one
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        engine = self.find(release)
        if engine is None:  # pragma: no cover - the rename above makes it
            raise InstallFailed(f"ClickHouse {release.clickhouse}: installed, yet not found in {self.root}")
        return engine

    def _pip(self, release: Release, site: Path, progress: bool) -> None:
        show = progress and sys.stderr.isatty()
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--no-warn-script-location", "--target", str(site), release.requirement]
        cmd += ["--progress-bar", "on"] if show else ["-q"]
        r = subprocess.run(cmd, stdout=sys.stderr if show else subprocess.PIPE,
                           stderr=None if show else subprocess.PIPE, text=True)
        if r.returncode:
            lines = [ln for ln in (r.stderr or "").splitlines() if ln.strip() and not ln.startswith("WARNING")]
            raise InstallFailed(f"installing {release.requirement} failed: "
                                f"{lines[-1].strip() if lines else f'pip exited with code {r.returncode}'}")

    def _verify(self, release: Release, site: Path) -> None:
        data = site.parent / "verify-data"
        data.mkdir(exist_ok=True)
        worker = WorkerProcess(str(site), str(data), f"ClickHouse {release.clickhouse}")
        try:
            version = worker.start().get("version")
        except EngineLost as e:
            raise InstallFailed(f"{release.requirement} installed but did not start: {e}") from None
        finally:
            worker.close()
            shutil.rmtree(data, ignore_errors=True)
        if version != release.clickhouse:
            raise InstallFailed(f"{release.requirement} answered SELECT version() = {version}, the catalog says "
                                f"{release.clickhouse}: not installed")

    def remove(self, release: Release) -> int:
        engine = self.find(release)
        if engine is None:
            raise UsageError(f"ClickHouse {release.clickhouse} is not installed")
        if engine.site is None:
            raise UsageError(f"ClickHouse {release.clickhouse} is chbench's own chDB engine: remove it with pip "
                             f"(pip uninstall {release.package}), not here")
        shutil.rmtree(Path(engine.site).parent)
        return engine.bytes

    def clean_partial(self) -> None:
        """Leftovers of installs that did not finish (their process is gone)."""
        if not self.root.is_dir():
            return
        for d in self.root.glob(".partial-*"):
            pid = d.name.rsplit("-", 1)[-1]
            if not (pid.isdigit() and int(pid) != os.getpid() and _running(int(pid))):
                shutil.rmtree(d, ignore_errors=True)
