"""Statistics: per-sample summaries, confidence intervals, tests and verdicts."""
