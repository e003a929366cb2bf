"""The report's charts: matplotlib figures rendered to inline SVG strings.

Why matplotlib SVG: a static file that needs no script to draw (it renders in a mail
client's preview and offline), a well-kept plotting library instead of hand-drawn
shapes, and small output: text stays text (``svg.fonttype = none``) and point clouds
over a few hundred samples are rasterized into one embedded image per chart.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from chbench.stats.verdict import QueryComparison  # noqa: E402

matplotlib.rcParams.update({
    "svg.fonttype": "none", "font.size": 8, "axes.titlesize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "figure.dpi": 100, "savefig.dpi": 100, "svg.hashsalt": "chbench",
})

VERDICT_COLORS = {"slower": "#d62728", "faster": "#2ca02c", "unstable": "#e6a700", "no change": "#7f7f7f",
                  "failed": "#9467bd", "fails on B only": "#9467bd", "answer changed": "#8c564b",
                  "only in A": "#17becf", "only in B": "#17becf"}
SIDE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
RASTERIZE_ABOVE = 300


def to_svg(fig: Any, name: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    # ids must be unique in one HTML page: prefix matplotlib's ids with the chart's name
    prefix = re.sub(r"[^A-Za-z0-9]", "_", name)
    svg = re.sub(r'id="([^"]+)"', rf'id="{prefix}_\1"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', rf'url(#{prefix}_\1)', svg)
    svg = re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{prefix}_\1"', svg)
    return svg.replace("<svg ", f'<svg data-plot="{name}" role="img" ', 1)


def distribution(name: str, sides: list[tuple[str, list[float]]], unit: str = "ms") -> str:
    """Every sample of each side as a strip over a box plot (horizontal)."""
    sides = [(lb, v) for lb, v in sides if v]
    fig, ax = plt.subplots(figsize=(4.2, 0.5 + 0.55 * max(1, len(sides))))
    rng = np.random.default_rng(0)
    for i, (_label, values) in enumerate(sides):
        ax.boxplot([values], positions=[i], orientation="horizontal", widths=0.5, showfliers=False,
                   medianprops={"color": "black"}, boxprops={"color": "#555"}, whiskerprops={"color": "#555"})
        y = i + rng.uniform(-0.18, 0.18, len(values))
        ax.scatter(values, y, s=6, alpha=0.55, color=SIDE_COLORS[i % len(SIDE_COLORS)],
                   rasterized=len(values) > RASTERIZE_ABOVE, linewidths=0)
    ax.set_yticks(range(len(sides)), [_short(lb) for lb, _ in sides])
    ax.set_xlabel(unit)
    ax.set_title("distribution (every sample)")
    return to_svg(fig, name)


def run_order(name: str, sides: list[tuple[str, list[float], list[float]]]) -> str:
    """Client (solid) and server (dashed) time of each sample, in run order: drift shows."""
    fig, ax = plt.subplots(figsize=(4.2, 1.9))
    for i, (label, client, server) in enumerate(sides):
        color = SIDE_COLORS[i % len(SIDE_COLORS)]
        ax.plot(range(1, len(client) + 1), client, marker=".", ms=3, lw=0.8, color=color, label=f"{_short(label)}")
        if server and any(v is not None for v in server):
            ax.plot(range(1, len(server) + 1), [math.nan if v is None else v for v in server], lw=0.8, ls="--",
                    color=color, alpha=0.7, label=f"{_short(label)} server")
    ax.set_xlabel("sample, in run order")
    ax.set_ylabel("ms")
    ax.set_title("samples in run order")
    ax.legend(fontsize=6, frameon=False)
    return to_svg(fig, name)


def forest(name: str, rows: list[QueryComparison], threshold: float) -> str:
    """Ratio B/A with its confidence interval per query, coloured by verdict."""
    rows = [r for r in rows if r.ratio]
    fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.22 * max(1, len(rows))))
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        color = VERDICT_COLORS.get(r.verdict, "#333")
        ratio = float(r.ratio or 1.0)
        ci = r.ci or (ratio, ratio)
        ax.plot(list(ci), [y, y], color=color, lw=1.6)
        ax.plot([ratio], [y], "o", color=color, ms=4)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.axvspan(1 / (1 + threshold), 1 + threshold, color="#ddd", alpha=0.6, lw=0)
    ax.set_xscale("log")
    _percent_axis(ax, [v for r in rows for v in (r.ci or (r.ratio, r.ratio)) if v and math.isfinite(v) and v > 0]
                  + [1 / (1 + threshold), 1 + threshold])
    ax.set_yticks(range(len(rows)), [_short(r.name, 38) for r in reversed(rows)])
    ax.set_xlabel("change B / A (log scale), bars: confidence interval; grey: ±threshold")
    handles = [plt.Line2D([], [], color=c, marker="o", lw=1.6, label=v) for v, c in VERDICT_COLORS.items()
               if any(r.verdict == v for r in rows)]
    # beside the axes, not on them: inside, it covered the end of the lowest query's interval
    ax.legend(handles=handles, fontsize=6, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("ratios with confidence intervals")
    return to_svg(fig, name)


def _percent_axis(ax: Any, ratios: list[float]) -> None:
    """A ratio axis labelled as changes (-10%, 0, +10%) at round steps, with room around the
    intervals: a log axis over a narrow range labelled itself "9×10⁻¹" and "10⁰"."""
    lo, hi = min(ratios) / 1.03, max(ratios) * 1.03
    ax.set_xlim(lo, hi)
    if hi / lo >= 5:  # wide: factors at powers of two (×0.5, ×1, ×2, ×4), evenly spaced on the log axis
        every = max(1, math.ceil(math.log2(hi / lo) / 6))
        ticks = [2.0 ** k for k in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1) if k % every == 0]
        labels = [f"×{t:g}" if t >= 1 else f"×1/{1 / t:g}" for t in ticks]
    else:
        step = next((s for s in (1, 2, 5, 10, 20, 50, 100) if (hi - lo) * 100 / s <= 6), 200)
        first, last = math.ceil((lo - 1) * 100 / step), math.floor((hi - 1) * 100 / step)
        ticks = [1 + k * step / 100 for k in range(first, last + 1)]
        labels = [f"{(t - 1) * 100:+g}%" if abs(t - 1) > 1e-9 else "0" for t in ticks]
    ax.set_xticks(ticks, labels)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def load_timeline(name: str, timeline: list[dict[str, Any]]) -> str:
    """QPS and p50/p99 over time, errors below."""
    t = [p.get("t", i) for i, p in enumerate(timeline)]
    fig, (ax, ax_err) = plt.subplots(2, 1, figsize=(6.5, 3.2), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(t, [p.get("qps") or 0 for p in timeline], color="#1f77b4", lw=1.2, label="QPS")
    ax.set_ylabel("QPS")
    ax2 = ax.twinx()
    for key, color in (("p50_ms", "#2ca02c"), ("p99_ms", "#d62728")):
        ax2.plot(t, [math.nan if p.get(key) is None else p[key] for p in timeline], color=color, lw=1, ls="--",
                 label=key.replace("_ms", ""))
    ax2.set_ylabel("latency ms")
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=6, frameon=False, loc="upper left")
    ax.set_title("QPS and latency over time")
    ax_err.bar(t, [p.get("errors") or 0 for p in timeline], color="#9467bd", width=0.8 * _step(t))
    ax_err.set_ylabel("errors")
    ax_err.set_xlabel("seconds")
    return to_svg(fig, name)


def _step(t: list[float]) -> float:
    return (t[1] - t[0]) if len(t) > 1 and t[1] > t[0] else 1.0


def latency_histogram(name: str, buckets: list[tuple[float, float, int]]) -> str:
    """A latency histogram on a log scale: (low ms, high ms, count) per bucket."""
    fig, ax = plt.subplots(figsize=(6.5, 2.2))
    if buckets:
        lows = [b[0] for b in buckets]
        widths = [max(b[1] - b[0], 1e-6) for b in buckets]
        ax.bar(lows, [b[2] for b in buckets], width=widths, align="edge", color="#1f77b4", lw=0)
        ax.set_xscale("log")
    ax.set_xlabel("latency ms (log scale)")
    ax.set_ylabel("queries")
    ax.set_title("latency histogram")
    return to_svg(fig, name)


def sweep(name: str, levels: list[dict[str, Any]], knee: int | None) -> str:
    """QPS and p99 against concurrency, the knee marked."""
    c = [lv["concurrency"] for lv in levels]
    fig, ax = plt.subplots(figsize=(6.5, 2.4))
    ax.plot(c, [lv.get("qps") or 0 for lv in levels], marker="o", color="#1f77b4", label="QPS")
    ax.set_xlabel("concurrency")
    ax.set_ylabel("QPS")
    ax2 = ax.twinx()
    ax2.plot(c, [lv.get("p99_ms") or math.nan for lv in levels], marker="s", ls="--", color="#d62728", label="p99")
    ax2.set_ylabel("p99 ms")
    if knee is not None:
        ax.axvline(knee, color="black", lw=0.8, ls=":")
        ax.annotate(f"knee: {knee}", (knee, ax.get_ylim()[1]), fontsize=7, va="top")
    ax.set_title("concurrency sweep")
    return to_svg(fig, name)


def clickbench_times(name: str, labels: list[str], queries: list[dict[str, Any]]) -> str:
    """Cold and hot seconds per query and entry (log scale), like ClickBench's site."""
    n = len(queries)
    fig, ax = plt.subplots(figsize=(6.8, 0.8 + 0.19 * n * max(1, len(labels)) ** 0.5))
    height = 0.8 / max(1, len(labels))
    for j, label in enumerate(labels):
        ys = [n - 1 - i + (j - (len(labels) - 1) / 2) * height for i in range(n)]
        cold = [q["entries"][j]["cold_s"] or math.nan for q in queries]
        hot = [q["entries"][j]["hot_s"] or math.nan for q in queries]
        color = SIDE_COLORS[j % len(SIDE_COLORS)]
        ax.barh(ys, cold, height=height, color=color, alpha=0.35, lw=0, label=f"{_short(label)} cold")
        ax.barh(ys, hot, height=height * 0.55, color=color, lw=0, label=f"{_short(label)} hot")
    ax.set_xscale("log")
    ax.set_yticks(range(n), [f"Q{q['query'] - 1}" for q in reversed(queries)], fontsize=6)
    ax.set_xlabel("seconds (log scale); light: cold (try 1), dark: hot (best of tries 2–3)")
    ax.legend(fontsize=6, frameon=False, loc="lower right")
    ax.set_title("per-query times")
    return to_svg(fig, name)


def clickbench_ratios(name: str, labels: list[str], queries: list[dict[str, Any]]) -> str:
    """Hot ratio to the best entry per query ((t + 10 ms) / (best + 10 ms)), log scale."""
    n = len(queries)
    fig, ax = plt.subplots(figsize=(6.8, 2.6))
    width = 0.8 / max(1, len(labels))
    for j, label in enumerate(labels):
        xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(n)]
        ax.bar(xs, [q["entries"][j]["hot_ratio"] for q in queries], width=width, lw=0,
               color=SIDE_COLORS[j % len(SIDE_COLORS)], label=_short(label))
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(range(n), [str(q["query"] - 1) for q in queries], fontsize=5)
    ax.set_xlabel("query")
    ax.set_ylabel("hot ratio to the best (log)")
    ax.legend(fontsize=6, frameon=False)
    ax.set_title("relative hot times (1 = the best entry)")
    return to_svg(fig, name)


def throughput(name: str, rows: list[tuple[str, float]], ceilings: list[tuple[str, float]]) -> str:
    """Rows/s per path, ceilings as vertical lines."""
    fig, ax = plt.subplots(figsize=(6.5, 0.7 + 0.25 * max(1, len(rows))))
    ax.barh(range(len(rows)), [r[1] for r in reversed(rows)], color="#1f77b4", lw=0)
    ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
    for i, (label, value) in enumerate(ceilings):
        ax.axvline(value, color=["#d62728", "#2ca02c"][i % 2], lw=1, ls="--", label=f"{label}: {value:,.0f}")
    ax.set_xlabel("rows/s")
    if ceilings:
        ax.legend(fontsize=6, frameon=False, loc="lower right")
    ax.set_title("throughput per path")
    return to_svg(fig, name)


def _short(text: str, n: int = 30) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def replay_schedule(name: str, sides: list[tuple[str, list[float], list[float]]]) -> str:
    """Planned vs actual start: each query's lateness (actual − planned send) against its
    planned time, per target."""
    fig, ax = plt.subplots(figsize=(6.5, 2.6))
    for i, (label, planned, lateness) in enumerate(sides):
        ax.scatter(planned, lateness, s=3, color=SIDE_COLORS[i % len(SIDE_COLORS)], label=label,
                   rasterized=len(planned) > RASTERIZE_ABOVE, linewidths=0)
    ax.axhline(5.0, color="#d62728", lw=0.8, ls="--", label="late (5 ms)")
    ax.set_xlabel("planned start (s)")
    ax.set_ylabel("actual − planned (ms)")
    ax.set_title("Schedule: how late each query started")
    ax.legend(fontsize=6, frameon=False, loc="upper left")
    return to_svg(fig, name)


def replay_latency(name: str, sides: list[tuple[str, list[float], list[float]]]) -> str:
    """Latency (from the planned start) over the replay, per target."""
    fig, ax = plt.subplots(figsize=(6.5, 2.6))
    for i, (label, planned, latency) in enumerate(sides):
        ax.scatter(planned, latency, s=3, color=SIDE_COLORS[i % len(SIDE_COLORS)], label=label,
                   rasterized=len(planned) > RASTERIZE_ABOVE, linewidths=0)
    ax.set_yscale("log")
    ax.set_xlabel("planned start (s)")
    ax.set_ylabel("latency ms")
    ax.set_title("Latency over time")
    ax.legend(fontsize=6, frameon=False, loc="upper left")
    return to_svg(fig, name)


def capacity(name: str, steps: list[dict[str, Any]], slos: list[dict[str, Any]], rate: float | None) -> str:
    """Each step's p99 (with its interval) against the offered rate, the latency SLOs as
    lines, the capacity marked."""
    fig, ax = plt.subplots(figsize=(6.5, 2.8))
    pts = sorted(steps, key=lambda s: s["offered_qps"])
    top = max([s["p99_ci"][1] or 0 for s in pts if s["p99_ci"][1] is not None] +
              [sl.get("limit_ms") or 0 for sl in slos] + [1.0]) * 1.3
    for s in pts:
        color = {"holds": "#2ca02c", "breaks": "#d62728"}.get(s["verdict"], "#e6a700")
        y = s["p99_ms"] if s["p99_ms"] is not None else top
        lo = s["p99_ci"][0] if s["p99_ci"][0] is not None else y
        hi = s["p99_ci"][1] if s["p99_ci"][1] is not None else top
        ax.errorbar([s["offered_qps"]], [y], yerr=[[max(0.0, y - lo)], [max(0.0, hi - y)]], fmt="o", ms=4,
                    color=color, capsize=2)
    for sl in slos:
        if sl.get("limit_ms") is not None:
            ax.axhline(sl["limit_ms"], color="#d62728", lw=0.8, ls="--", label=sl["slo"])
    if rate is not None:
        ax.axvline(rate, color="#1f77b4", lw=1, label=f"capacity {rate:.1f} QPS")
    ax.set_ylim(0, top)
    ax.set_xlabel("offered QPS")
    ax.set_ylabel("p99 latency ms")
    ax.set_title("Latency against offered rate (green: SLO holds, red: breaks)")
    ax.legend(fontsize=6, frameon=False, loc="upper left")
    return to_svg(fig, name)


def operator_times(name: str, rows: list[tuple[str, float, float]]) -> str:
    """A changed query's operators, side by side: each one's median time in A and B (ms)."""
    fig, ax = plt.subplots(figsize=(6.5, 0.7 + 0.32 * max(1, len(rows))))
    y = np.arange(len(rows))
    ax.barh(y + 0.2, [r[1] / 1000 for r in rows], height=0.4, color="#1f77b4", lw=0, label="A")
    ax.barh(y - 0.2, [r[2] / 1000 for r in rows], height=0.4, color="#ff7f0e", lw=0, label="B")
    ax.set_yticks(y, [_short(r[0]) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("operator time, ms (median over runs, all its instances)")
    ax.legend(fontsize=6, frameon=False, loc="lower right")
    return to_svg(fig, name)


def flame_diff(name: str, a: dict[str, float], b: dict[str, float], title: str = "") -> str:
    """A differential flame graph: each frame's width is its mean share of the samples in
    A and B, its colour the change from A to B (red: more of B's time, blue: less)."""
    from matplotlib.patches import Rectangle

    ta, tb = sum(a.values()) or 1.0, sum(b.values()) or 1.0
    root: dict[str, Any] = {"a": 0.0, "b": 0.0, "kids": {}}
    for stacks, total, side in ((a, ta, "a"), (b, tb, "b")):
        for stack, n in stacks.items():
            node = root
            node[side] += n / total
            for frame in stack.split(";")[:FLAME_DEPTH]:
                node = node["kids"].setdefault(frame, {"a": 0.0, "b": 0.0, "kids": {}})
                node[side] += n / total
    boxes: list[tuple[float, int, float, str, float]] = []  # x, depth, width, frame, change

    def lay(node: dict[str, Any], x: float, depth: int) -> None:
        for frame, kid in sorted(node["kids"].items()):
            w = (kid["a"] + kid["b"]) / 2
            if w >= FLAME_MIN:
                boxes.append((x, depth, w, frame, kid["b"] - kid["a"]))
                lay(kid, x, depth + 1)
            x += w

    lay(root, 0.0, 0)
    depth = max((d for _, d, *_ in boxes), default=0) + 1
    fig, ax = plt.subplots(figsize=(8.0, 0.6 + 0.18 * depth))
    for x, d, w, frame, change in boxes:
        k = max(-1.0, min(1.0, change / max(w, 1e-9)))
        colour = (1.0, 1 - 0.8 * k, 1 - 0.8 * k) if k > 0 else (1 + 0.8 * k, 1 + 0.8 * k, 1.0)
        ax.add_patch(Rectangle((x, d), w, 0.95, facecolor=colour, edgecolor="white", lw=0.3))
        if w >= 0.04:
            ax.text(x + 0.003, d + 0.45, _short(frame.split("(")[0], int(w * 120)), fontsize=5, va="center")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, depth)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or "sampled stacks, A → B (red: more of B's time, blue: less)", fontsize=7)
    return to_svg(fig, name)


FLAME_DEPTH = 40  # frames from the root
FLAME_MIN = 0.002  # narrower frames are left out (a share of all samples)


def _trend_axes(ax: Any, versions: list[str], series: list[dict[str, Any]], steps: list[dict[str, Any]],
                small: bool) -> None:
    """One query's series over the versions: each version's ratio to the first with its
    interval; a step between two versions is marked at the later one (red: slower,
    green: faster, brown: answer, grey dashed: plan)."""
    xs = [i for i, p in enumerate(series) if p.get("ratio")]
    ys = [float(series[i]["ratio"]) for i in xs]
    ax.plot(xs, ys, "-", color="#1f77b4", lw=1.0 if small else 1.4)
    for i in xs:
        p = series[i]
        ci = p.get("ci") or [p["ratio"], p["ratio"]]
        ax.plot([i, i], ci, color="#1f77b4", lw=1.2)
        color = VERDICT_COLORS.get(p.get("verdict", ""), "#1f77b4")
        ax.plot([i], [p["ratio"]], "o", color=color, ms=2.5 if small else 4)
    for s in steps:
        x = versions.index(s["to"]) - 0.5
        mark = {"answer": "#8c564b", "plan": "#999"}.get(s["kind"]) or VERDICT_COLORS.get(s.get("verdict", ""), "#333")
        ax.axvline(x, color=mark, lw=1.0, ls="--" if s["kind"] == "plan" else "-", alpha=0.8)
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(range(len(versions)), [v if not small else ".".join(v.split(".")[:2]) for v in versions],
                  rotation=90 if len(versions) > 4 else 0, fontsize=5 if small else 7)


def trend_series(name: str, query: str, versions: list[str], series: list[dict[str, Any]],
                 steps: list[dict[str, Any]]) -> str:
    fig, ax = plt.subplots(figsize=(6.5, 2.6))
    _trend_axes(ax, versions, series, steps, small=False)
    ax.set_ylabel(f"time / {versions[0]}")
    ax.set_title(f"{_short(query, 50)}: each version against {versions[0]}, bars: 95% interval; lines: steps")
    return to_svg(fig, name)


def trend_overview(name: str, versions: list[str], queries: list[dict[str, Any]], steps: list[dict[str, Any]]) -> str:
    """Small multiples: every query's series, one small chart each."""
    n = max(1, len(queries))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.9 * cols, 1.5 * rows), squeeze=False, sharex=True)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        q = queries[k]
        _trend_axes(ax, versions, q["series"], [s for s in steps if s["query"] == q["name"]], small=True)
        ax.set_title(_short(q["name"], 24), fontsize=7)
    fig.suptitle(f"every query: time against {versions[0]} (1 = the same)", fontsize=8)
    fig.tight_layout()
    return to_svg(fig, name)


_KIND_COLORS = {"regression": "#d62728", "improvement": "#2ca02c", "trend": "#e6a700"}


def history_series(name: str, query: str, medians: list[float], cis: list[list[float]],
                   changes: list[tuple[int, str]], hover: list[str]) -> str:
    """One query's stored runs: each run's median with its 95% interval, a line where a
    change starts; hovering a point shows the run (time, id, version, labels)."""
    fig, ax = plt.subplots(figsize=(7.0, 2.6))
    xs = list(range(len(medians)))
    ax.plot(xs, medians, "-", color="#1f77b4", lw=0.8, alpha=0.6)
    for i, (m, ci) in enumerate(zip(medians, cis, strict=True)):
        ax.plot([i, i], ci, color="#1f77b4", lw=0.8, alpha=0.7)
        ax.plot([i], [m], "o", color="#1f77b4", ms=3, gid=f"run{i}")
    for i, kind in changes:
        ax.axvline(i - 0.5, color=_KIND_COLORS.get(kind, "#333"), lw=1.2, alpha=0.9)
    ax.set_ylabel("median (ms)")
    ax.set_xlabel("run")
    ax.set_title(f"{_short(query, 50)}: each run's median, bars: 95% interval; lines: changes")
    svg = to_svg(fig, name)
    prefix = re.sub(r"[^A-Za-z0-9]", "_", name)
    for i, text in enumerate(hover):  # an SVG <title> is the browser's tooltip
        safe = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        svg = svg.replace(f'<g id="{prefix}_run{i}">', f'<g id="{prefix}_run{i}"><title>run {i}: {safe}</title>', 1)
    return svg


def history_overview(name: str, series: list[tuple[str, list[float], list[int]]]) -> str:
    """Small multiples: every query's medians over its runs, changes marked (the queries
    with the most recent change first)."""
    n = max(1, len(series))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.9 * cols, 1.4 * rows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        q, med, marks = series[k]
        ax.plot(range(len(med)), med, "-", color="#1f77b4", lw=0.8)
        for i in marks:
            ax.axvline(i - 0.5, color="#d62728", lw=0.9)
        ax.set_title(_short(q, 24), fontsize=7)
        ax.tick_params(labelsize=5)
    fig.suptitle("every query: median per run (lines: changes)", fontsize=8)
    fig.tight_layout()
    return to_svg(fig, name)
