"""roembed: robust ordinal embedding from contaminated relative comparisons."""
from .data import ComparisonGraph, Comparisons, InvalidComparisonsError, as_comparisons
from .data import load_material, load_music, load_music_genres, load_things
from .data import from_cblearn, from_frame, read_comparisons, to_cblearn, to_frame, write_comparisons
from .estimators import CKL, GNMDS, SOE, STE, TSTE, TwoStageEmbedding
from .estimators import RobustOrdinalEmbedding, RobustOrdinalEmbeddingCV
from .estimators import ROE

__version__ = "0.1.0"
__all__ = ["Comparisons", "ComparisonGraph", "InvalidComparisonsError", "as_comparisons", "__version__",
           "load_music", "load_music_genres", "load_material", "load_things",
           "read_comparisons", "write_comparisons", "from_frame", "to_frame", "from_cblearn", "to_cblearn",
           "GNMDS", "CKL", "STE", "TSTE", "SOE", "TwoStageEmbedding",
           "RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "ROE"]
