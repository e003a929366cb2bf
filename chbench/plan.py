"""A plan: the workload × targets × settings that one ``chbench run`` executes."""

from __future__ import annotations

from dataclasses import dataclass, field

from chbench.targets import Target
from chbench.workload import Query


@dataclass
class SidePlan:
    """One side of a run: a target, its queries and the settings asked for."""

    id: str  # "A" or "B"
    target: Target
    queries: list[Query]
    settings: dict[str, str] = field(default_factory=dict)  # requested by the user
    scale: float | None = None  # for the built-in suite
    label: str = ""

    def query(self, name: str) -> Query | None:
        for q in self.queries:
            if q.name == name:
                return q
        return None


@dataclass
class Plan:
    sides: list[SidePlan]
    warmup: int = 1
    iterations: int | None = None  # None: adaptive
    min_runs: int = 5
    max_runs: int = 1000
    target_precision: float = 0.02  # stop when the median's 95% CI is within ±2%
    max_time_per_query: float = 20.0
    timeout: float | None = None
    keep_format: bool = False
    allow_writes: bool = False
    interleave: bool = True
    server_metrics: bool = False
    calibration: bool = True
    max_threads: int | None = None

    @property
    def side_by_side(self) -> bool:
        return len(self.sides) > 1

    def query_names(self) -> list[str]:
        """Every query name, in the order of side A, then those only B has."""
        names: list[str] = []
        for side in self.sides:
            for q in side.queries:
                if q.name not in names:
                    names.append(q.name)
        return names
