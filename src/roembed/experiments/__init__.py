"""Experiment protocols (synthetic, music), contamination models and the runner."""
from .synthetic import CONTAMINATION_MODELS, SyntheticData, make_synthetic

__all__ = ["CONTAMINATION_MODELS", "SyntheticData", "make_synthetic"]
