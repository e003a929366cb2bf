"""Comparing results: the sides a file holds (``sides``), and the comparison of two sides
(``build``) that ``chbench compare``, ``chbench report`` and load's comparison mode share.
The statistics themselves are ``chbench.stats``."""

from chbench.compare.build import CompareOptions, Comparison, build_comparison, match_names
from chbench.compare.sides import Side, Sides, sides_of

__all__ = ["CompareOptions", "Comparison", "Side", "Sides", "build_comparison", "match_names", "sides_of"]
