"""Estimators: thin compositions of a loss, a parametrisation and a solver."""
from .base import OrdinalEmbedding

__all__ = ["OrdinalEmbedding"]
