"""Lines of Python in chbench/, per package, at git revisions and in the working tree
(issue 28's bar: "lines of code in chbench/ go down, not up").

    python bench/loc.py ab40c9f HEAD .        # '.' is the working tree
    python bench/loc.py --code ab40c9f .      # only lines holding code

A package is the first folder under chbench/; top-level modules count as ``top``. By
default every line counts (blank lines, comments and docstrings too); with ``--code``
only lines holding code (not blank, not only a comment, not part of a docstring).
"""

from __future__ import annotations

import io
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
        tokenize.ENCODING}


def code_lines(text: str) -> int:
    """Lines holding a token that is not a comment, and not a string standing alone as a
    statement (a docstring)."""
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines: set[int] = set()
    for i, t in enumerate(toks):
        if t.type in SKIP:
            continue
        if t.type == tokenize.STRING:
            j = i - 1
            while j >= 0 and toks[j].type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                j -= 1
            alone_before = j < 0 or toks[j].type == tokenize.NEWLINE or toks[j].string == ":"
            if alone_before and toks[i + 1].type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                continue
        lines.update(range(t.start[0], t.end[0] + 1))
    return len(lines)


def count(rev: str, code: bool = False) -> Counter[str]:
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
        out["top" if len(parts) == 2 else parts[1]] += code_lines(text) if code else text.count("\n")
    return out


def main() -> None:
    code = "--code" in sys.argv[1:]
    revs = [a for a in sys.argv[1:] if a != "--code"] or ["HEAD", "."]
    counts = [count(r, code) for r in revs]
    packages = sorted(set().union(*counts))
    print(f"{'package':<12}" + "".join(f"{r:>10}" for r in revs) + ("    change" if len(revs) > 1 else ""))
    for p in [*packages, "TOTAL"]:
        row = [sum(c.values()) if p == "TOTAL" else c.get(p, 0) for c in counts]
        change = f"{row[-1] - row[0]:>+10}" if len(row) > 1 else ""
        print(f"{p:<12}" + "".join(f"{n:>10}" for n in row) + change)


if __name__ == "__main__":
    main()
