"""roembed: robust ordinal embedding from contaminated relative comparisons.

The public names below are imported on first use, so ``import roembed`` (and the
``roembed`` command's start, where Ctrl-C must stay one line) does not pay for
numpy, pandas and scikit-learn until something needs them.
"""
import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "roembed.data": ("Comparisons", "ComparisonGraph", "InvalidComparisonsError", "as_comparisons",
                     "load_music", "load_music_genres", "load_material", "load_things",
                     "read_comparisons", "write_comparisons", "from_frame", "to_frame", "from_cblearn",
                     "to_cblearn"),
    "roembed.estimators": ("GNMDS", "CKL", "STE", "TSTE", "SOE", "TwoStageEmbedding",
                           "RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "ROE"),
    "roembed.uncertainty": ("bootstrap",),
    "roembed.sandwich": ("local_uncertainty",),
    "roembed.dimension": ("select_dimension",),
    "roembed.report": ("write_report",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = ["__version__", *_WHERE]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")  # a submodule: roembed.annotators, ...
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
