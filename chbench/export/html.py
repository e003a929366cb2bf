"""A self-contained HTML report: one file, charts as inline SVG (matplotlib), a few
lines of inline script for sorting and filtering tables, nothing fetched when viewed.

Every number shown carries its exact value in ``data-value``; the text is that value
rounded for reading. Tables with class ``sortable`` sort on a header click (by
``data-value``) and filter with the box above them.
"""

from __future__ import annotations

import html
import math
import zlib
from importlib import resources
from typing import Any

from chbench import __version__
from chbench.export.base import Exporter, transfer_table
from chbench.report import plots
from chbench.runner.environment import now_iso


def _asset(name: str) -> str:
    return resources.files("chbench.report").joinpath("assets", name).read_text(encoding="utf-8")





def esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


def num(v: float | None, fmt: str, cls: str = "") -> str:
    """A cell with the exact value in data-value and the rounded one as text."""
    c = f' class="{cls}"' if cls else ""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return f'<td{c} data-value="">-</td>'
    return f'<td{c} data-value="{v!r}">{format(v, fmt)}</td>'


def pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def text_cell(v: Any, cls: str = "l") -> str:
    return f'<td class="{cls}">{esc(v)}</td>'


class HtmlExporter(Exporter):
    name = "html"

    def __init__(self, plots_per_query: bool = True) -> None:
        self.plots_per_query = plots_per_query
        self._table_ids = 0

    # -- the interface ----------------------------------------------------------------
    def report(self, model: dict[str, Any]) -> str:
        parts = []
        nav = []
        for i, sec in enumerate(model["sections"]):
            anchor = f"s{i}"
            title, body = getattr(self, f"_{sec['kind']}")(sec)
            nav.append(f'<a href="#{anchor}">{esc(title)}</a>')
            parts.append(f'<section id="{anchor}" data-section="{sec["kind"]}"><h2>{esc(title)}</h2>{body}</section>')
        files = ", ".join(f"<code>{esc(f)}</code>" for f in model["files"])
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(model['title'])}</title><style>{_asset('report.css')}</style></head><body>"
            f"<header><h1>{esc(model['title'])}</h1><p class=\"meta\">chbench {esc(__version__)}, {esc(now_iso())}"
            f" — from {files}</p><nav>{''.join(nav)}</nav></header>"
            + "".join(parts) + f"<script>{_asset('report.js')}</script></body></html>\n"
        )

    def comparison(self, doc: dict[str, Any]) -> str:
        return self.report({"title": "chbench compare", "files": doc.get("files", []),
                            "sections": [{"kind": "comparison", "files": doc.get("files", []), "doc": doc,
                                          "samples": {}}]})

    def clickbench(self, doc: dict[str, Any]) -> str:
        return self.report({"title": "ClickBench scores", "files": [s["file"] for s in doc["scores"]],
                            "sections": [{"kind": "clickbench", "files": [], "doc": doc}]})

    def transfer(self, doc: dict[str, Any]) -> str:
        return self.report({"title": f"chbench {doc['kind']}", "files": [],
                            "sections": [{"kind": "transfer", "file": "", "doc": doc}]})

    # -- pieces ------------------------------------------------------------------------
    def _table(self, header: list[str], rows: list[str], left: int = 1, filterable: bool = True) -> str:
        self._table_ids += 1
        tid = f"t{self._table_ids}"
        heads = "".join(f'<th class="{"l" if i < left else ""}">{esc(h)}</th>' for i, h in enumerate(header))
        box = (f'<input class="filter" data-table="{tid}" placeholder="filter rows…" aria-label="filter">'
               if filterable else "")
        return (f'{box}<table id="{tid}" class="sortable"><thead><tr>{heads}</tr></thead>'
                f'<tbody>{"".join(rows)}</tbody></table>')

    # -- comparison --------------------------------------------------------------------
    def _comparison(self, sec: dict[str, Any]) -> tuple[str, str]:
        doc = sec["doc"]
        s = doc["summary"]
        out = [f'<p class="note">A = {esc(doc.get("a_label", "A"))}<br>B = {esc(doc.get("b_label", "B"))}</p>']
        verdicts = ", ".join(f"{n} {esc(v)}" for v, n in sorted(s["verdicts"].items(), key=lambda kv: -kv[1]))
        g = s["geomean"]
        geo = ""
        if g.get("ratio") is not None:
            ci = g.get("ci")
            ci_txt = f" (95% CI {pct(ci[0])} … {pct(ci[1])})" if ci else ""
            geo = (f'<p class="big" data-geomean="{g["ratio"]!r}">Geometric mean of ratios B/A: {pct(g["ratio"])}'
                   f'{ci_txt} over {g["queries"]} queries</p>')
        out.append(f'<p class="big">Verdicts: {verdicts}</p>{geo}')
        t = s.get("total_median_ms") or {}
        if t.get("ratio") is not None:
            out.append(f'<p class="note">TOTAL of medians: A {t["a"]:.1f} ms, B {t["b"]:.1f} ms ({pct(t["ratio"])})'
                       "</p>")
        m = s.get("machine")
        if m:
            out.append(f'<p class="note">Machine drift (calibration query): {pct(m["calibration_ratio"])}, '
                       f'{"material" if m["material"] else "not material"}.</p>')
        for n in doc.get("notes", []):
            out.append(f'<p class="note">Note: {esc(n)}</p>')
        out.append(f'<p class="note">Threshold ±{s["threshold"]:.0%}, alpha {s["alpha"]}, '
                   f'{esc(s["correction"])} correction.</p>')
        out.append(f'<div class="charts">{plots.forest("forest", doc["queries"], s["threshold"])}</div>')
        rows = []
        for r in doc["queries"]:
            a, b = r.get("a") or {}, r.get("b") or {}
            ci = r.get("ci") or [None, None]
            notes = "; ".join(list(r.get("reasons") or []) + list(r.get("flags") or []))
            rows.append(
                f'<tr data-query="{esc(r["name"])}">{text_cell(r["name"])}'
                f'<td class="l v-{esc(r["verdict"].replace(" ", "-"))}">{esc(r["verdict"])}</td>'
                + num(a.get("median"), ".2f") + num(b.get("median"), ".2f") + num(r.get("ratio"), ".4f")
                + num(ci[0], ".4f") + num(ci[1], ".4f") + num(r.get("p_adjusted"), ".3g")
                + num(a.get("runs"), "d") + num(b.get("runs"), "d") + text_cell(notes) + "</tr>")
        out.append(self._table(["query", "verdict", "A median ms", "B median ms", "ratio B/A", "CI low", "CI high",
                                "p (adj.)", "A runs", "B runs", "reasons and flags"], rows, left=2))
        if self.plots_per_query and sec.get("samples"):
            out.append("<h3>Per query: both distributions, and samples in run order</h3>")
            for r in doc["queries"]:
                smp = sec["samples"].get(r["name"]) or {}
                a, b = smp.get("A") or {}, smp.get("B") or {}
                if not (a.get("times") or b.get("times")):
                    continue
                key = _key(r["name"])
                dist = plots.distribution(f"dist-{key}", [("A", a.get("times", [])), ("B", b.get("times", []))])
                order = plots.run_order(f"order-{key}", [("A", a.get("times", []), a.get("server", [])),
                                                          ("B", b.get("times", []), b.get("server", []))])
                out.append(f'<details open><summary>{esc(r["name"])} — <span class="v-'
                           f'{esc(r["verdict"].replace(" ", "-"))}">{esc(r["verdict"])}</span> {pct(r.get("ratio"))}'
                           f'</summary><div class="charts">{dist}{order}</div></details>')
        return "Comparison", "".join(out)

    # -- a run -------------------------------------------------------------------------
    def _run(self, sec: dict[str, Any]) -> tuple[str, str]:
        out = [f'<p class="note">{esc(sec["file"])} — status {esc(sec.get("status"))}; targets: '
               + "; ".join(f"{esc(k)} = {esc(v)}" for k, v in sec["labels"].items()) + "</p>"]
        rows = []
        for q in sec["queries"]:
            for side, sm in q["summary"].items():
                rows.append(f"<tr>{text_cell(q['name'])}{text_cell(side)}" + num(sm["runs"], "d")
                            + num(sm["client_ms"], ".2f") + num(sm["server_ms"], ".2f") + num(sm["cpu_ms"], ".1f")
                            + num(sm["memory"], ",.0f") + num(sm["read_rows"], ",.0f") + num(q["errors"], "d")
                            + "</tr>")
        out.append(self._table(["query", "side", "runs", "client ms (median)", "server ms", "server CPU ms",
                                "memory bytes", "rows read", "errors"], rows, left=2))
        if self.plots_per_query:
            for q in sec["queries"]:
                sides = [(side, d["client_ms"]) for side, d in q["sides"].items()]
                if not any(v for _, v in sides):
                    continue
                key = _key(sec["file"] + q["name"])
                dist = plots.distribution(f"dist-{key}", [(s, [x for x in v if x is not None]) for s, v in sides])
                order = plots.run_order(f"order-{key}", [(s, d["client_ms"], d["server_ms"])
                                                         for s, d in q["sides"].items()])
                out.append(f'<details open><summary>{esc(q["name"])}</summary>'
                           f'<div class="charts">{dist}{order}</div></details>')
        return f"Run: {sec['file'].split('/')[-1]}", "".join(out)

    # -- load --------------------------------------------------------------------------
    def _load(self, sec: dict[str, Any]) -> tuple[str, str]:
        out = [f'<p class="note">{esc(sec["file"])} — status {esc(sec.get("status"))}; '
               f'{esc("; ".join(str(t) for t in sec["targets"]))}</p>']
        rows = [f"<tr>{num(lv['concurrency'], 'd')}{num(lv['seconds'], '.1f')}{num(lv['queries'], ',d')}"
                f"{num(lv['qps'], ',.2f')}{num(lv['p50_ms'], '.3f')}{num(lv['p90_ms'], '.3f')}"
                f"{num(lv['p99_ms'], '.3f')}{num(lv['max_ms'], '.3f')}{num(lv['errors'], ',d')}</tr>"
                for lv in sec["levels"]]
        out.append(self._table(["concurrency", "seconds", "queries", "QPS", "p50 ms", "p90 ms", "p99 ms", "max ms",
                                "errors"], rows, left=0, filterable=False))
        sweep = sec.get("sweep")
        if sweep and sweep.get("levels"):
            knee = (sweep.get("knee") or {}).get("concurrency")
            out.append(f'<div class="charts">{plots.sweep("sweep", sweep["levels"], knee)}</div>')
            out.append(f'<p class="note">Knee: {esc(knee if knee is not None else "none")}</p>')
        for i, lv in enumerate(sec["levels"]):
            key = f"{_key(sec['file'])}_{i}"
            charts = []
            if lv["timeline"]:
                charts.append(plots.load_timeline(f"timeline-{key}", lv["timeline"]))
            if lv["buckets"]:
                charts.append(plots.latency_histogram(f"histogram-{key}", lv["buckets"]))
            out.append(f"<h3>Concurrency {esc(lv['concurrency'])}</h3><div class=\"charts\">{''.join(charts)}</div>")
            if lv["errors_by_code"]:
                out.append('<p class="note">Errors by code: ' + ", ".join(
                    f"{esc(c)}: {esc(n)}" for c, n in lv["errors_by_code"].items()) + "</p>")
        return f"Load: {sec['file'].split('/')[-1]}", "".join(out)

    # -- ClickBench --------------------------------------------------------------------
    def _clickbench(self, sec: dict[str, Any]) -> tuple[str, str]:
        doc = sec["doc"]
        labels = [f"{s['system']} ({s['machine']})" if s["machine"] else s["system"] for s in doc["scores"]]
        rows = [f'<tr data-entry="{esc(lb)}">{text_cell(lb)}{num(s["cold"], ".2f")}{num(s["hot"], ".2f")}'
                f'{num(s["combined"], ".2f")}{num(s["load_time"], ",.0f")}'
                f'{num(None if s["data_size"] is None else s["data_size"] / 1e9, ".2f")}{num(s["failed_tries"], "d")}'
                "</tr>" for lb, s in zip(labels, doc["scores"], strict=True)]
        out = ['<p class="note">Scores as ClickBench defines them: per query (t + 0.01 s) / (best + 0.01 s), a '
               "missing result as 2 × max(300 s, the entry's slowest), geometric mean; cold = try 1, hot = the "
               "better of tries 2 and 3; combined = load 10%, size 10%, cold 20%, hot 60%. Lower is better.</p>",
               self._table(["entry", "cold score", "hot score", "combined", "load s", "data GB", "failed tries"],
                           rows, filterable=False)]
        out.append('<div class="charts">' + plots.clickbench_times("clickbench-times", labels, doc["queries"])
                   + plots.clickbench_ratios("clickbench-ratios", labels, doc["queries"]) + "</div>")
        qrows = []
        for q in doc["queries"]:
            cells = "".join(num(e["cold_s"], ".3f") + num(e["hot_s"], ".3f") + num(e["hot_ratio"], ".2f")
                            for e in q["entries"])
            qrows.append(f'<tr data-query="{q["query"] - 1}"><td class="l" data-value="{q["query"] - 1}">'
                         f'Q{q["query"] - 1}</td>{cells}</tr>')
        head = ["query"] + [f"{lb} {k}" for lb in labels for k in ("cold s", "hot s", "hot ratio")]
        out.append(self._table(head, qrows))
        return "ClickBench", "".join(out)

    # -- ingest / read -----------------------------------------------------------------
    def _transfer(self, sec: dict[str, Any]) -> tuple[str, str]:
        doc = sec["doc"]
        title, header, rows, notes = transfer_table(doc)
        r = doc["result"]
        bars = [(p["name"], p["rows_per_s"]) for p in r["paths"] if p.get("rows_per_s")]
        if doc["kind"] == "ingest":
            ceilings = [("server INSERT … SELECT", r["ceiling"]["rows_per_s"])] if r.get("ceiling") else []
        else:
            ceilings = [(c["name"], c["rows_per_s"]) for c in r.get("ceilings", []) if c.get("rows_per_s")]
        html_rows = ["<tr>" + "".join(text_cell(c, "l" if i == 0 or not _numeric(c) else "") for i, c in enumerate(row))
                     + "</tr>" for row in rows]
        body = [f'<p class="note">{esc(title)}</p>', self._table(header, html_rows)]
        if bars:
            chart = plots.throughput("throughput-" + doc["kind"], bars, ceilings)
            body.append(f'<div class="charts">{chart}</div>')
        body += [f'<p class="note">{esc(n)}</p>' for n in notes]
        return ("Ingest" if doc["kind"] == "ingest" else "Read") + (f": {sec['file'].split('/')[-1]}"
                                                                      if sec.get("file") else ""), "".join(body)


def _key(text: str) -> str:
    """A stable, id-safe name for a chart (the same in every run)."""
    return f"k{zlib.crc32(text.encode()):08x}"


def _numeric(text: str) -> bool:
    t = text.replace(",", "").replace("%", "").replace(".", "", 1)
    return t.isdigit()
