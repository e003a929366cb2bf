"""Why a query changed: the server's own counters and operator times per measured run
(collected after the rounds, untimed: ``collect.py``), compared per slower or faster
query (``chbench/stats/explain.py``) and shown by ``chbench explain``, ``compare``,
``upgrade`` and the report (``build.py``)."""
