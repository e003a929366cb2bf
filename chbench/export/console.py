from __future__ import annotations

import io
import sys
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from chbench.export.base import (
    SCORE_HEADER,
    Exporter,
    clickbench_rows,
    fmt_ci,
    fmt_ms,
    fmt_ratio,
    notes_of,
    summary_lines,
    transfer_table,
)
from chbench.stats.summary import median_ci

STYLE = {"slower": "bold red", "faster": "bold green", "unstable": "yellow", "failed": "magenta"}


class ConsoleExporter(Exporter):
    name = "console"

    def __init__(self, color: bool | None = None, width: int | None = None) -> None:
        self.color = color
        self.width = width

    def _console(self, buf: io.StringIO) -> Console:
        tty = sys.stdout.isatty() if self.color is None else self.color
        return Console(file=buf, force_terminal=tty, no_color=not tty, width=self.width or (None if tty else 140))

    def clickbench(self, doc: dict[str, Any]) -> str:
        buf = io.StringIO()
        con = self._console(buf)
        labels, scores, queries = clickbench_rows(doc)
        t = Table(title="ClickBench scores (lower is better; 1.00 = the best of these entries)", title_justify="left")
        for col in SCORE_HEADER:
            t.add_column(col, justify="left" if col == "entry" else "right")
        for row in scores:
            t.add_row(*row)
        con.print(t)
        q = Table(title="Per query: cold s, hot s (hot ratio to the best)", title_justify="left")
        q.add_column("query")
        for label in labels:
            q.add_column(f"{label} cold", justify="right")
            q.add_column(f"{label} hot", justify="right")
        for row in queries:
            q.add_row(*row)
        con.print(q)
        return buf.getvalue()

    def transfer(self, doc: dict[str, Any]) -> str:
        buf = io.StringIO()
        con = self._console(buf)
        title, header, rows, notes = transfer_table(doc)
        t = Table(title=title, title_justify="left")
        for col in header:
            t.add_column(col, justify="left" if col in ("path", "unit", "checksum", "status") else "right")
        for row in rows:
            t.add_row(*row)
        con.print(t)
        for n in notes:
            con.print(n)
        return buf.getvalue()

    def comparison(self, doc: dict[str, Any]) -> str:
        buf = io.StringIO()
        con = self._console(buf)
        t = Table(title=f"A = {doc.get('a_label', 'A')}\nB = {doc.get('b_label', 'B')}", title_justify="left")
        for col, just in (("query", "left"), ("verdict", "left"), ("A ms", "right"), ("B ms", "right"),
                          ("change", "right"), ("95% CI", "left"), ("p adj.", "right"), ("notes", "left")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for r in doc["queries"]:
            p = r.get("p_adjusted")
            t.add_row(r["name"], f"[{STYLE.get(r['verdict'], '')}]{r['verdict']}[/]" if r["verdict"] in STYLE
                      else r["verdict"], fmt_ms(r.get("a")), fmt_ms(r.get("b")), fmt_ratio(r.get("ratio")),
                      fmt_ci(r.get("ci")), "-" if p is None else f"{p:.2g}", notes_of(r))
        con.print(t)
        for line in summary_lines(doc):
            con.print(line, highlight=False)
        return buf.getvalue()

    def run_summary(self, doc: dict[str, Any]) -> str:
        """A table of what one run measured (median and interval per query and side)."""
        buf = io.StringIO()
        con = self._console(buf)
        t = Table(title="chbench run: client time per query (ms)", title_justify="left")
        for col in ("query", "side", "runs", "errors", "median", "95% CI of median", "server median"):
            t.add_column(col)
        for q in doc["queries"]:
            for sid in q["sides"]:
                samples = [s for s in q["samples"] if s["target"] == sid and not s["warmup"]]
                ok = [s["client_ms"] for s in samples if not s["error"]]
                srv = [s["server_ms"] for s in samples if not s["error"] and s.get("server_ms") is not None]
                errs = [s for s in samples if s["error"]]
                if ok:
                    lo, hi = median_ci(ok)
                    med = f"{float(np.median(ok)):.1f}"
                    ci = f"{lo:.1f} – {hi:.1f}"
                    sm = f"{float(np.median(srv)):.1f}" if srv else "-"
                else:
                    med = ci = sm = "-"
                err_txt = str(len(errs)) if not errs else f"{len(errs)} ({errs[0]['error'].get('message', '')[:60]})"
                t.add_row(q["name"], sid, str(len(ok)), err_txt, med, ci, sm)
        con.print(t)
        return buf.getvalue()
