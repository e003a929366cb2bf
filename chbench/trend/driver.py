"""``chbench trend`` from versions to the file: what it will cost (disk, time), the
targets (one per version, or the user's), the same data built on each, one N-way
interleaved run with answers and plans checked on every side, then the ``trend`` object
(``series.py``) written into the run's own results file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chbench.results import RunDocument, open_as, write_atomic

if TYPE_CHECKING:
    from chbench.compare import CompareOptions
    from chbench.runner.runner import RunOutcome
    from chbench.targets import Target
    from chbench.workload import Workload


@dataclass
class TrendPlan:
    versions: list[str]  # what each side is called in the trend: a version, or the target as given
    workload: Workload
    scale: float | None
    warmup: int | None  # None: the runner's default (Plan.warmup)
    iterations: int | None
    max_time_per_query: float
    timeout: float | None
    precision: float = 0.02
    settings: dict[str, str] | None = None
    threshold: float | None = 0.05  # adaptive: undecided queries go on (stats/stopping.py)


def cost(versions: list[str], catalog_versions: bool, queries: int, budget_s: float) -> dict[str, Any]:
    """Disk to install (catalog versions not installed yet) and the measuring's time bound."""
    from chbench.engines.store import EngineStore, engines_dir

    missing: list[str] = []
    disk = 0
    if catalog_versions:
        store = EngineStore()
        for v in versions:
            release = store.catalog.resolve(v)
            if store.find(release) is None:
                missing.append(release.clickhouse)
                disk += int(release.installed_bytes or 0)
    return {"install": missing, "install_bytes": disk, "queries": queries, "time_bound_s": queries * budget_s,
            "where": str(engines_dir()) if catalog_versions else None}


def describe_cost(c: dict[str, Any]) -> str:
    parts = []
    if c["install"]:
        parts.append(f"installs {len(c['install'])} engine(s) ({', '.join(c['install'])}, "
                     f"{c['install_bytes'] / 1e9:.1f} GB) into {c['where']}")
    t = c["time_bound_s"]
    bound = f"~{t / 60:.0f} min" if t >= 90 else f"~{t:.0f} s"
    n = c["queries"]
    parts.append(f"measures for at most {bound} ({n} quer{'y' if n == 1 else 'ies'} × "
                 f"{t / max(1, n):.0f} s each over every version, plus the checks)")
    return "chbench trend " + " and ".join(parts)


def measure(tp: TrendPlan, targets: list[Target], out: str, quiet: bool, data_sql: str | None) -> RunOutcome:
    from chbench.plan import Plan, SidePlan, side_ids
    from chbench.runner import run_plan
    from chbench.ui.progress import make_progress
    from chbench.upgrade.checks import Checks

    sides = [SidePlan(sid, t, tp.workload, dict(tp.settings or {}), tp.scale, label=v)
             for sid, t, v in zip(side_ids(len(targets)), targets, tp.versions, strict=True)]
    plan = Plan(sides=sides, warmup=tp.warmup, iterations=tp.iterations, max_time_per_query=tp.max_time_per_query,
                timeout=tp.timeout, allow_writes=False, target_precision=tp.precision,
                threshold=tp.threshold)
    return run_plan(plan, out, make_progress(quiet), Checks(data_sql))


def add_trend(out: str, versions: list[str], opts: CompareOptions) -> dict[str, Any]:
    """The trend of the finished run in ``out``, written into it (atomically)."""
    from chbench.compare.nway import build_nway
    from chbench.trend.series import trend_object

    n = len(versions)
    adjacent = [(i, i + 1) for i in range(n - 1)]
    nway = build_nway(out, opts, pairs=adjacent + [(0, j) for j in range(2, n)], family=len(adjacent))
    trend = trend_object(nway, versions)
    doc = open_as(out, RunDocument, "a chbench run file")
    doc.trend = trend
    write_atomic(out, doc.to_json())
    return trend
