"""Which settings a run sends: the measurement defaults (query cache off, read-only
unless writes are allowed), the plan's switches, the workload's settings, the user's,
then each query's own — only those the server knows; the rest are reported. The
calibration query gets the measurement's own settings only."""

from __future__ import annotations

from chbench.plan import Plan, SidePlan
from chbench.targets import ServerInfo
from chbench.targets.base import known_to_none


def settings_to_send(side: SidePlan, info: ServerInfo, plan: Plan) -> tuple[dict[str, str], list[str], list[str]]:
    """The settings this side sends, the ones the server does not know, and notes."""
    wanted, notes = _measurement(info, plan, configured=True)
    wanted.update(side.workload.settings)
    wanted.update(side.settings)
    sent = {k: v for k, v in wanted.items() if info.knows(k)}
    unsupported = sorted(k for k in wanted if not info.knows(k))
    return sent, unsupported, notes


def check_user_settings(plan: Plan, infos: dict[str, ServerInfo]) -> list[str]:
    """The user's own settings (``--setting``, ``--setting-b``) against the servers, before
    anything runs. One that no side's server knows is a typo: a one-line error (as ``load``
    says it), not a run that quietly leaves it out — ``--setting-b max_thread=1`` measured
    an A/A and reported "no change". One that some sides know (a setting newer than the
    other version) is left out where it is unknown: a note says where."""
    asked = sorted({k for side in plan.sides for k in side.settings})
    unknown_to = {k: [s for s in plan.sides if not infos[s.id].knows(k)] for k in asked}
    # a bisect step (more_to_come) sees two versions of many: a setting of later versions is
    # unknown to both, and no typo
    typos = [] if plan.more_to_come else known_to_none(asked, (infos[s.id] for s in plan.sides))
    if typos:
        raise infos[plan.sides[0].id].unknown_settings(typos)
    return [f"setting {k} is not known to ClickHouse {infos[s.id].version} (side {s.id}): not sent there"
            for k in asked for s in unknown_to[k] if k in s.settings]


def calibration_settings(info: ServerInfo, plan: Plan) -> dict[str, str]:
    """What the calibration query is sent with: the measurement's own settings, none of the
    configuration under test (``--setting``, the workload's, ``--max-threads``). It is the
    machine's witness: sent with the side's settings, ``--setting max_threads=1`` moved it
    +66% along with every query, and ``history check`` called the suite's +90% the machine
    (2026-12-06)."""
    wanted, _ = _measurement(info, plan, configured=False)
    return {k: v for k, v in wanted.items() if info.knows(k)}


def _measurement(info: ServerInfo, plan: Plan, configured: bool) -> tuple[dict[str, str], list[str]]:
    """The measurement's own settings (query cache off, read-only, the timeout, query_log,
    the profiler) and, when ``configured``, ``--max-threads``."""
    wanted: dict[str, str] = {"use_query_cache": "0"}
    notes: list[str] = []
    if not plan.allow_writes:
        current = info.settings.get("readonly", "0")
        if current in ("0", ""):
            wanted["readonly"] = "2"
        else:
            notes.append(f"user is already readonly={current}")
    if configured and plan.max_threads is not None:
        wanted["max_threads"] = str(plan.max_threads)
    if plan.server_metrics:
        wanted["log_queries"] = "1"
    elif plan.explain and info.settings.get("log_queries") == "0":
        # 18.x logs no query by default: chbench explain needs each run in query_log
        wanted["log_queries"] = "1"
        notes.append("log_queries=1 sent (this server's default is 0): each run's counters for chbench explain; "
                     "--no-explain sends nothing")
    if plan.profile_ms:
        period = str(int(plan.profile_ms * 1_000_000))
        wanted["query_profiler_real_time_period_ns"] = period
        wanted["query_profiler_cpu_time_period_ns"] = period
    if plan.timeout:
        wanted["max_execution_time"] = info.time_limit(plan.timeout)
    return wanted, notes


def query_settings(sent: dict[str, str], own: dict[str, str], info: ServerInfo) -> tuple[dict[str, str], list[str]]:
    """A query's settings: the side's, with the query's own on top (known ones only)."""
    if not own:
        return sent, []
    merged = {**sent, **{k: v for k, v in own.items() if info.knows(k)}}
    return merged, sorted(k for k in own if not info.knows(k))


def statement_settings(sent: dict[str, str]) -> dict[str, str]:
    """Set-up and tear-down: the side's settings, without read-only (they are there to write)."""
    return {k: v for k, v in sent.items() if k != "readonly"}


def group_settings(sent: dict[str, str], group: dict[str, str], user: dict[str, str],
                   info: ServerInfo) -> dict[str, str]:
    """A performance test's statements and queries: the side's settings, the test's on
    top, and the user's over both (what is compared, e.g. --setting-b, wins) — known ones."""
    return {**sent, **{k: v for k, v in {**group, **user}.items() if info.knows(k)}}


# ClickHouse's JIT: an expression (aggregate functions, a sort description) is compiled
# on its use after ``min_count_to_compile_*`` uses (3 by default) and runs compiled
# after. Measured on the embedded 26.9 (the built-in suite, one process): the 4th run of
# a query took +18 to +42% (the compile), group_by_large ran +94, +39, +27, +21% on its
# first four runs and 23% faster compiled than with the JIT off. With one warm-up run, the
# third timed round of every run held that compile. ClickHouse's own performance tests
# turn the JIT off instead; chbench measures the server as its users run it, so it warms
# up past the compile (``jit_warmup``).
JIT_SETTINGS = (("compile_expressions", "min_count_to_compile_expression"),
                ("compile_aggregate_expressions", "min_count_to_compile_aggregate_expression"),
                ("compile_sort_description", "min_count_to_compile_sort_description"))


def jit_warmup(settings: dict[str, str]) -> int:
    """Warm-up runs a query needs before its runs are compiled ones: the largest
    ``min_count_to_compile_*`` among the JIT switches that are on, plus the compiling
    run; 0 where none is on (18.16's defaults) or the server has none."""
    counts = [int(settings[n]) for flag, n in JIT_SETTINGS
              if settings.get(flag, "0").lower() in ("1", "true") and settings.get(n, "").isdigit()]
    return max(counts) + 1 if counts else 0
