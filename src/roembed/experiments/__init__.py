"""Experiment protocols (synthetic, music), contamination models, the runner and the report."""
from .music import MusicProtocol
from .runner import METHODS, MethodSpec, ResultStore, available_methods, register_method, run_experiment
from .synthetic import CONTAMINATION_MODELS, Split, SyntheticData, SyntheticProtocol, make_synthetic

__all__ = ["CONTAMINATION_MODELS", "METHODS", "MethodSpec", "MusicProtocol", "ResultStore", "Split",
           "SyntheticData", "SyntheticProtocol", "available_methods", "make_synthetic", "register_method",
           "run_experiment"]
