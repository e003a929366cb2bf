"""Regenerate chbench's engine catalog (chbench/engines/catalog.json) from the real releases.

Every chDB release bundles a whole ClickHouse; which one is a fact to read off the
release, not to guess. For each published release of ``chdb`` and ``chdb-core`` this
script reads the wheel list from PyPI's JSON API (which Python versions and platforms
have wheels), installs the release alone into a scratch directory (``pip install
--no-deps --target``; pip's own download cache is reused), and asks it, in a process of
its own:

* ``SELECT version()`` — the ClickHouse version it bundles;
* whether it has persistent sessions (``chdb.connect``) or only one-shot queries;
* whether its build can listen (``SYSTEM START LISTEN QUERIES ALL``: a real HTTP + native
  server, ``server@VERSION``).

A release that depends on ``chdb-core`` (its METADATA says so) carries no engine of its own
(its engine is that chdb-core release, probed separately) and is recorded as such. A release with no wheel for
this Python or that fails to import is recorded with the reason, never guessed.

    python scripts/engine_catalog.py                       # every release (~45, a few minutes)
    python scripts/engine_catalog.py --only chdb==3.0.1    # one release, merged into the file
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

PACKAGES = ("chdb", "chdb-core")
OUT = Path(__file__).resolve().parent.parent / "chbench" / "engines" / "catalog.json"

PROBE = r"""
import json, os, socket, sys, tempfile, threading, time, urllib.request


def text(r):
    for name in ("bytes", "data", "get_memview"):
        f = getattr(r, name, None)
        if f is not None:
            v = f()
            return v if isinstance(v, str) else bytes(v).decode()
    return str(r)


try:
    import chdb
except Exception as e:
    print(json.dumps({"error": "import: %s" % str(e).splitlines()[0][:200]}))
    sys.exit(0)
out = {"clickhouse": text(chdb.query("SELECT version()", "TabSeparated")).strip(),
       "api": "connect" if hasattr(chdb, "connect") else "query", "chdb_version": getattr(chdb, "__version__", None)}
try:  # chbench's worker keeps tables in a data directory: one-shot releases need path=
    chdb.query("SELECT 1", "TabSeparated", path=tempfile.mkdtemp())
except TypeError as e:
    out["error"] = ("unusable: query() takes no path= argument, so tables do not persist between its one-shot "
                    "calls (%s)" % str(e).splitlines()[0][:80])
print(json.dumps(out), flush=True)
# can this build listen? the server recipe of ../shared/SERVERS.md: a FIFO keeps the call
# (and its listeners) alive until a line is written to it; /ping must answer meanwhile
ports = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); s.close()
home = tempfile.mkdtemp()
with open(os.path.join(home, "config.xml"), "w") as f:
    f.write("<clickhouse><listen_host>127.0.0.1</listen_host><http_port>%d</http_port><tcp_port>%d</tcp_port>"
            "<keep_alive_timeout>3</keep_alive_timeout></clickhouse>" % tuple(ports))
os.chdir(home)
fifo = os.path.join(home, "stop")
os.mkfifo(fifo)
err = []
def serve():
    try:
        import chdb._chdb as low
        r = low.query("SYSTEM START LISTEN QUERIES ALL; SELECT count() FROM file('%s', 'LineAsString')" % fifo,
                      "TSV", path=tempfile.mkdtemp())
        msg = getattr(r, "error_message", lambda: "")()
        if msg:
            err.append(msg)
    except Exception as e:
        err.append(str(e))
t = threading.Thread(target=serve, daemon=True)
t.start()
ok = False
deadline = time.time() + 30
while time.time() < deadline and t.is_alive() and not ok:
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/ping" % ports[0], timeout=1) as r:
            ok = r.status == 200
    except OSError:
        time.sleep(0.2)
if t.is_alive():
    end = time.time() + 10
    while time.time() < end and t.is_alive():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until the engine opens it
        except OSError:
            time.sleep(0.2)
            continue
        os.write(fd, b"stop\n")
        os.close(fd)
        break
    t.join(10)
res = {"listens": ok}
if not ok:
    lines = err[0].strip().splitlines() if err else []
    res["listen_error"] = lines[0][:200] if lines else "no answer on /ping"
print(json.dumps(res), flush=True)
os._exit(0)
"""


def pypi(package: str) -> dict:
    with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=60) as r:
        return json.load(r)


def wheel_tags(files: list[dict]) -> dict:
    """Python versions and platforms with wheels, read off the wheel file names."""
    pythons: set[str] = set()
    abi3: list[str] = []
    plats: set[str] = set()
    for f in files:
        name = f["filename"]
        if not name.endswith(".whl"):
            continue
        _, _, py, abi, plat = name[:-4].split("-")[-5:]
        for tag in py.split("."):
            m = re.fullmatch(r"cp(\d)(\d+)", tag)
            if m and abi == "abi3":
                abi3.append(f"{m.group(1)}.{m.group(2)}")
            elif m:
                pythons.add(f"{m.group(1)}.{m.group(2)}")
        for p in plat.split("."):
            arch = "x86_64" if "x86_64" in p else "aarch64" if ("aarch64" in p or "arm64" in p) else \
                "universal2" if "universal2" in p else p
            osname = "macos" if p.startswith("macosx") else "musllinux" if p.startswith("musllinux") else "linux"
            plats.add(f"{osname}_{arch}")
    key = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    out: dict = {"python": sorted(pythons, key=key), "platforms": sorted(plats)}
    if abi3:
        out["abi3_from"] = min(abi3, key=key)
    return out


def probe(package: str, version: str, scratch: Path) -> dict:
    """Install one release alone and ask it; the scratch directory is removed after."""
    site = scratch / f"{package}-{version}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                          "--target", str(site), f"{package}=={version}"], capture_output=True, text=True)
    if pip.returncode:
        tail = [ln for ln in pip.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
        return {"error": "install: " + (tail[-1][:200] if tail else f"pip exit {pip.returncode}")}
    try:
        # a release that depends on chdb-core carries no engine of its own
        for meta in site.glob("*.dist-info/METADATA"):
            for line in meta.read_text(errors="replace").splitlines():
                req = line.partition(":")[2].strip()
                if line.startswith("Requires-Dist:") and req.replace("_", "-").startswith("chdb-core"):
                    return {"engine_from": req.split(";")[0].strip()}
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(scratch)}
        try:
            r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120,
                               cwd=str(scratch), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {"error": "probe timed out", "installed_bytes": size}
        out: dict = {"installed_bytes": size}
        for line in r.stdout.splitlines():
            if line.startswith("{"):
                out.update(json.loads(line))
        if "clickhouse" not in out and "error" not in out:
            out["error"] = "probe: " + (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1][:200]
        return out
    finally:
        shutil.rmtree(site, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=[], help="package==version ... (merged into the catalog)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    old = json.loads(args.out.read_text()) if args.out.exists() else {"releases": []}
    keep = {(r["package"], r["version"]): r for r in old.get("releases", [])}
    wanted = [tuple(s.split("==", 1)) for s in args.only]
    scratch = Path(tempfile.mkdtemp(prefix="chbench-catalog-"))
    today = dt.date.today().isoformat()
    here = f"Python {platform.python_version()}, {platform.system()} {platform.machine()}"
    try:
        for package in PACKAGES:
            info = pypi(package)
            for version, files in info["releases"].items():
                if not files or (wanted and (package, version) not in wanted):
                    continue
                entry: dict = {"package": package, "version": version,
                               "uploaded": min(f["upload_time"] for f in files)[:10], **wheel_tags(files)}
                print(f"{package}=={version} …", file=sys.stderr, flush=True)
                entry.update(probe(package, version, scratch))
                entry["seen"] = {"date": today, "on": here}
                keep[(package, version)] = entry
                print(json.dumps(entry), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    releases = sorted(keep.values(), key=lambda r: (r["package"], [int(x) if x.isdigit() else 0
                                                                    for x in re.split(r"[.]", r["version"])]))
    doc = {
        "chbench_engine_catalog": 1,
        "generated_by": "scripts/engine_catalog.py",
        "method": "each release installed alone (pip --no-deps --target) and asked SELECT version(), "
                  "whether chdb.connect exists, and whether SYSTEM START LISTEN QUERIES ALL works; wheel "
                  "tags from PyPI's JSON API",
        "generated_at": today,
        "releases": releases,
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"{len(releases)} releases → {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
