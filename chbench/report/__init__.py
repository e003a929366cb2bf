"""``chbench report``: results files turned into one self-contained HTML file (charts
inline) or Markdown — the model in ``model.py``, the charts in ``plots.py``, the
formats in ``chbench/export/html.py`` and ``markdown.py``."""
