from __future__ import annotations

from typing import Any

from chbench.export.base import (
    SCORE_HEADER,
    Exporter,
    clickbench_rows,
    fmt_ci,
    fmt_ms,
    fmt_ratio,
    notes_of,
    summary_lines,
)

ICON = {"slower": "🔴 slower", "faster": "🟢 faster", "unstable": "🟡 unstable"}


class MarkdownExporter(Exporter):
    name = "markdown"

    def clickbench(self, doc: dict[str, Any]) -> str:
        labels, scores, queries = clickbench_rows(doc)
        out = ["## ClickBench scores", "", "| " + " | ".join(SCORE_HEADER) + " |",
               "|---" + "|---:" * (len(SCORE_HEADER) - 1) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in scores]
        head = ["query"] + [f"{lb} {k}" for lb in labels for k in ("cold s", "hot s")]
        out += ["", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in queries]
        out.append("")
        out.append("Scores: per query (t + 0.01 s) / (best + 0.01 s), a missing result as 2 x max(300 s, the "
                   "entry's slowest query), geometric mean; combined = load 10%, size 10%, cold 20%, hot 60%.")
        return "\n".join(out) + "\n"

    def comparison(self, doc: dict[str, Any]) -> str:
        out = [f"## chbench compare: {doc.get('a_label', 'A')} → {doc.get('b_label', 'B')}", ""]
        out += ["| query | verdict | A median ms | B median ms | change | 95% CI | p (adj.) | notes |",
                "|---|---|---:|---:|---:|---|---:|---|"]
        for r in doc["queries"]:
            p = r.get("p_adjusted")
            out.append(
                f"| {r['name']} | {ICON.get(r['verdict'], r['verdict'])} | {fmt_ms(r.get('a'))} | {fmt_ms(r.get('b'))}"
                f" | {fmt_ratio(r.get('ratio'))} | {fmt_ci(r.get('ci'))} | {'-' if p is None else f'{p:.3g}'}"
                f" | {notes_of(r).replace('|', '/')} |"
            )
        out.append("")
        out += [f"- {line}" for line in summary_lines(doc)]
        return "\n".join(out) + "\n"
