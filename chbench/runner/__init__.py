"""The runner: executes a plan, turns executions into samples and keeps the results
file up to date after every query."""

from chbench.runner.runner import RunOutcome, run_plan

__all__ = ["RunOutcome", "run_plan"]
