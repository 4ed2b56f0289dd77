"""Comparison data: the container types, conversions, readers and writers."""
from .comparisons import ComparisonGraph, Comparisons, canonical_quadruplets
from .validation import InvalidComparisonsError, SkippedRowsWarning, SkipReport
from .coerce import as_comparisons
from .convert import from_odd_one_out
from .datasets import load_material, load_music, load_music_genres, load_things

__all__ = [
    "Comparisons", "ComparisonGraph", "canonical_quadruplets", "InvalidComparisonsError", "as_comparisons",
    "SkippedRowsWarning", "SkipReport", "from_odd_one_out",
    "load_music", "load_music_genres", "load_material", "load_things",
]
