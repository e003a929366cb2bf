"""``chbench upgrade OLD NEW``: two ClickHouse versions side by side on the same data —
speed (the usual verdicts), answers, plans and changed setting defaults (``checks.py``),
on workloads built the same way on both sides (``workload.py``)."""
