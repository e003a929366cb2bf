from __future__ import annotations

from typing import Any

from chbench.export.base import Exporter, fmt_ci, fmt_ms, fmt_ratio, notes_of, summary_lines

ICON = {"slower": "🔴 slower", "faster": "🟢 faster", "unstable": "🟡 unstable"}


class MarkdownExporter(Exporter):
    name = "markdown"

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
