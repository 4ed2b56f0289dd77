"""roembed: robust ordinal embedding from contaminated relative comparisons."""
from .data import ComparisonGraph, Comparisons, InvalidComparisonsError, as_comparisons
from .data import load_material, load_music, load_music_genres, load_things
from .estimators import CKL, GNMDS, SOE, STE, TSTE

__version__ = "0.1.0"
__all__ = ["Comparisons", "ComparisonGraph", "InvalidComparisonsError", "as_comparisons", "__version__",
           "load_music", "load_music_genres", "load_material", "load_things",
           "GNMDS", "CKL", "STE", "TSTE", "SOE"]
