"""Lines of Python in chbench/, per package, at git revisions and in the working tree
(issue 28's bar: "lines of code in chbench/ go down, not up").

    python bench/loc.py ab40c9f HEAD .        # '.' is the working tree

A package is the first folder under chbench/; top-level modules count as ``top``.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def count(rev: str) -> Counter[str]:
    out: Counter[str] = Counter()
    if rev == ".":
        files = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in (REPO / "chbench").rglob("*.py")}
    else:
        names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "chbench"], cwd=REPO, check=True,
                               capture_output=True, text=True).stdout.split()
        files = {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=REPO, check=True, capture_output=True,
                                   text=True).stdout for n in names if n.endswith(".py")}
    for name, text in files.items():
        parts = name.split("/")
        out["top" if len(parts) == 2 else parts[1]] += text.count("\n")
    return out


def main() -> None:
    revs = sys.argv[1:] or ["HEAD", "."]
    counts = [count(r) for r in revs]
    packages = sorted(set().union(*counts))
    print(f"{'package':<12}" + "".join(f"{r:>10}" for r in revs) + ("    change" if len(revs) > 1 else ""))
    for p in [*packages, "TOTAL"]:
        row = [sum(c.values()) if p == "TOTAL" else c.get(p, 0) for c in counts]
        change = f"{row[-1] - row[0]:>+10}" if len(row) > 1 else ""
        print(f"{p:<12}" + "".join(f"{n:>10}" for n in row) + change)


if __name__ == "__main__":
    main()
