"""The runner: executes a plan (set-up, warm-up, rounds, tear-down), turns executions
into samples and keeps the results file up to date after every query."""

from chbench.runner.runner import RunOutcome, close_targets, run_plan

__all__ = ["RunOutcome", "close_targets", "run_plan"]
