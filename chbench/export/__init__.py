"""Output formats behind one interface, like hyperfine's ``export/`` modules.

Each exporter turns a comparison (the document ``compare --format json`` prints) into
text. ``get_exporter(name)`` picks one."""

from chbench.export.base import Exporter, get_exporter

__all__ = ["Exporter", "get_exporter"]
