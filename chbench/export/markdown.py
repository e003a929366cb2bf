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
    transfer_table,
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

    def report(self, model: dict[str, Any]) -> str:
        """The report's content as Markdown (tables, verdicts, summaries; no charts)."""
        out = [f"# {model['title']}", ""]
        for sec in model["sections"]:
            kind = sec["kind"]
            if kind == "comparison":
                out.append(self.comparison(sec["doc"]))
            elif kind == "clickbench":
                out.append(self.clickbench(sec["doc"]))
            elif kind == "transfer":
                out.append(self.transfer(sec["doc"]))
            elif kind == "run":
                out.append(self._run_section(sec))
            elif kind == "load":
                out.append(self._load_section(sec))
        return "\n".join(out)

    def _run_section(self, sec: dict[str, Any]) -> str:
        out = [f"## Run: {sec['file']}", "",
               "| query | side | runs | client ms (median) | server ms | server CPU ms | memory bytes | rows read |",
               "|---|---|---:|---:|---:|---:|---:|---:|"]

        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        for q in sec["queries"]:
            for side, sm in q["summary"].items():
                out.append(f"| {q['name']} | {side} | {sm['runs']} | {f(sm['client_ms'], '.2f')} | "
                           f"{f(sm['server_ms'], '.2f')} | {f(sm['cpu_ms'], '.1f')} | {f(sm['memory'], ',.0f')} | "
                           f"{f(sm['read_rows'], ',.0f')} |")
        return "\n".join(out) + "\n"

    def _load_section(self, sec: dict[str, Any]) -> str:
        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        out = [f"## Load: {sec['file']}", "", "| concurrency | seconds | queries | QPS | p50 ms | p90 ms | p99 ms | "
               "errors |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for lv in sec["levels"]:
            out.append(f"| {lv['concurrency']} | {f(lv['seconds'], '.1f')} | {lv['queries']:,} | {f(lv['qps'], ',.2f')}"
                       f" | {f(lv['p50_ms'], '.3f')} | {f(lv['p90_ms'], '.3f')} | {f(lv['p99_ms'], '.3f')} | "
                       f"{lv['errors']:,} |")
        knee = ((sec.get("sweep") or {}).get("knee") or {}).get("concurrency")
        if sec.get("sweep"):
            out += ["", f"Knee of the sweep: {knee if knee is not None else 'none'}."]
        return "\n".join(out) + "\n"

    def transfer(self, doc: dict[str, Any]) -> str:
        title, header, rows, notes = transfer_table(doc)
        out = [f"## {title}", "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        return "\n".join(out + [""] + notes) + "\n"

    def clickbench_run(self, doc: dict[str, Any]) -> str:
        """The report of ``chbench clickbench run``."""
        t, tb = doc.get("target") or {}, doc.get("table") or {}
        load = doc.get("load") or {}
        out = [f"## ClickBench on {t.get('url', '?')} (ClickHouse {(doc.get('server') or {}).get('version')})", ""]
        out.append(f"- table: {tb.get('rows', 0):,} rows, {tb.get('data_size', 0) / 1e6:,.1f} MB on disk"
                   + (f"; loaded from {load.get('source')} in {load.get('seconds', 0):.1f} s" if load else ""))
        cold = doc.get("cold")
        if cold:
            out.append(f"- cold try: dropped {', '.join(s.replace('SYSTEM DROP ', '') for s in cold['dropped'])}"
                       + ("; OS page cache too" if cold.get("os_page_cache") else "; not the OS page cache"))
        else:
            out.append("- no cold try (--no-cold): every try is hot")
        out.append(f"- status: {doc.get('status')}; tries per query: {doc.get('tries')}")
        out += ["", "| query | " + " | ".join(f"try {i + 1} s" for i in range(int(doc.get("tries") or 3)))
                + " | rows | checksum | mode | notes |",
                "|---" + "|---:" * int(doc.get("tries") or 3) + "|---:|---|---|---|"]
        for q in doc.get("queries", []):
            tries = ["null" if tr["seconds"] is None else f"{tr['seconds']:.3f}" for tr in q["tries"]]
            err = next((tr["error"]["message"] for tr in q["tries"] if tr.get("error")), "")
            notes = "; ".join(x for x in (q.get("flag") or "", err[:120].replace("|", "\\|")) if x)
            rows = "-" if q["rows"] is None else str(q["rows"])
            out.append(f"| Q{q['index'] - 1} | " + " | ".join(tries) + f" | {rows} | `{q['checksum'] or '-'}` | "
                       f"{q['mode']} | {notes} |")
        ref = doc.get("reference")
        if ref:
            counted = [d for d in ref["differences"] if d["counted"]]
            out += ["", f"### Checksums against {ref['file']}", ""]
            if not ref["differences"]:
                out.append("Every checksum matches.")
            for d in ref["differences"]:
                kind = "**correctness regression**" if d["counted"] else "listed (order-sensitive)"
                out.append(f"- Q{d['index'] - 1}: {d['what']} — {kind}: here {d['here']}, reference {d['reference']}")
            out.append("")
            out.append(f"{len(counted)} counted difference(s).")
        conc = doc.get("concurrent")
        if conc:
            out += ["", f"### Concurrent: {conc['qps']:.3f} QPS, error ratio {conc['error_ratio']:.3f} "
                    f"over {conc['seconds']:.1f} s", "", "| query | ok | errors | p50 ms | p90 ms | p99 ms |",
                    "|---|---:|---:|---:|---:|---:|"]
            for q in conc["per_query"]:
                cells = ["-" if q[k] is None else f"{q[k]:.1f}" for k in ("p50", "p90", "p99")]
                out.append(f"| Q{q['query'] - 1} | {q['ok']} | {q['errors']} | " + " | ".join(cells) + " |")
        out += ["", "Checksums: order-independent over rows, floats to 9 significant digits; *ties* mode ignores "
                "which of the rows tied at a LIMIT edge were returned; *order-sensitive* queries (LIMIT without a "
                "visible total order) are listed, not failed. See docs/clickbench.md."]
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
