"""Real ClickHouse engines for tests and benchmark scripts (the launchers live in
``chbench/servers.py``; ``chbench clickbench crash-test`` uses them too).

Run ``python -m tests.engines modern`` to start one by hand.
"""

from __future__ import annotations

import sys
import time
import urllib.parse
import urllib.request

from chbench.servers import LegacyServer, ModernServer, _Server, free_port

__all__ = ["LegacyServer", "ModernServer", "free_port", "http_post"]


def http_post(port: int, sql: str, **params: str) -> str:
    """A statement over HTTP with these settings; the body of the answer (errors raise)."""
    query = "?" + urllib.parse.urlencode(params) if params else ""
    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/{query}", data=sql.encode()),
                                timeout=60) as resp:
        return str(resp.read().decode())

if __name__ == "__main__":  # pragma: no cover - manual use
    kind = sys.argv[1] if len(sys.argv) > 1 else "modern"
    server: _Server = ModernServer() if kind == "modern" else LegacyServer()
    print(f"{kind} server: {server.http_url}  {server.native_url}  (Ctrl-C stops it)", flush=True)
    try:
        while server.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
