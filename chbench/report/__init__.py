"""What an output shows, before any formatting: typed sections (``export/sections.py``)
built from results documents and comparisons — one builder per kind (``comparison``,
``run``, ``load``, ``clickbench``, ``transfer``), ``build`` for ``chbench report``, and
the charts (``plots.py``, matplotlib, drawn only by formats that show them)."""
