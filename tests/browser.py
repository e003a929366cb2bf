"""Headless Chromium (Debian's chromium + chromium-driver) through selenium, for the
report tests: open a file, collect console errors, count charts, take a screenshot."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


class Browser:
    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="chbench-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--no-first-run", "--disable-component-update", "--disable-sync", "--disable-quic",
                     "--window-size=1280,2000", f"--user-data-dir={self.profile}"):
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)

    def open(self, path: Path) -> dict[str, Any]:
        """Load a file; return load time (s, navigation start → load event end) and console errors."""
        t0 = time.perf_counter()
        self.driver.get(path.resolve().as_uri())
        wall = time.perf_counter() - t0
        timing = self.driver.execute_script(
            "var t = performance.getEntriesByType('navigation')[0]; return t ? t.loadEventEnd : null;")
        logs = self.driver.get_log("browser")
        errors = [e for e in logs if e.get("level") == "SEVERE"]
        return {"wall_s": wall, "load_ms": timing, "errors": errors, "logs": logs}

    def js(self, script: str) -> Any:
        return self.driver.execute_script(script)

    def screenshot(self, path: Path) -> None:
        height = self.driver.execute_script("return document.body.scrollHeight")
        self.driver.set_window_size(1280, min(int(height) + 50, 12000))
        self.driver.save_screenshot(str(path))

    def close(self) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)
