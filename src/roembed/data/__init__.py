"""Comparison data: the container types, conversions, readers and writers."""
from .comparisons import ComparisonGraph, Comparisons, canonical_quadruplets
from .validation import InvalidComparisonsError
from .coerce import as_comparisons

__all__ = ["Comparisons", "ComparisonGraph", "canonical_quadruplets", "InvalidComparisonsError", "as_comparisons"]
