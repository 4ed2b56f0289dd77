"""Comparison data: the container types, conversions, readers and writers."""
from .comparisons import (ComparisonGraph, Comparisons, annotator_index, annotator_units, canonical_quadruplets,
                          distinct_values)
from .validation import InvalidComparisonsError, InvalidRowsError, SkippedRowsWarning, SkipReport
from .coerce import as_comparisons
from .answers import from_odd_one_out, from_rank_trials
from .convert import from_cblearn, from_frame, to_array, to_cblearn, to_frame, to_salmon
from .io import read_comparisons, read_names, write_comparisons
from .datasets import load_material, load_music, load_music_genres, load_things

__all__ = [
    "Comparisons", "ComparisonGraph", "annotator_index", "annotator_units", "canonical_quadruplets", "distinct_values", "InvalidComparisonsError", "InvalidRowsError", "as_comparisons",
    "SkippedRowsWarning", "SkipReport", "from_odd_one_out", "from_rank_trials", "from_cblearn", "to_cblearn", "from_frame",
    "to_frame", "to_salmon", "to_array", "read_comparisons", "write_comparisons", "read_names",
    "load_music", "load_music_genres", "load_material", "load_things",
]
